import { client, unwrap } from './client';
import type { Session } from './types';

export const getSession = () => unwrap<Session>(client.GET('/auth/session'));
export const login = (username: string, password: string) => unwrap<unknown>(client.POST('/auth/login', { body: { username, password } }));
export const logout = () => unwrap<unknown>(client.POST('/auth/logout'));
