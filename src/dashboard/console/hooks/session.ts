import { queryOptions, useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { getSession, login, logout } from '../api/auth';
import { ApiError } from '../api/client';
import type { Role } from '../api/types';

const isUnauthorized = (e: unknown) => e instanceof ApiError && e.status === 401;

/**
 * Who the console acts as (`GET /auth/session`), as {@link useSession} and the
 * first view's prefetch (prefetch.ts) read it. A 401 is an answer, not a
 * failure: not retried, and not asked again when the shell mounts after the
 * prefetch got it (login and logout reset the cache).
 */
export const sessionQuery = queryOptions({ queryKey: ['session'], queryFn: getSession, retry: (n, e) => !isUnauthorized(e) && n < 2, retryOnMount: (q) => !isUnauthorized(q.state.error), staleTime: 60_000 });

/** Who the console acts as (`GET /auth/session`); a 401 means: log in. */
export function useSession() {
  return useQuery(sessionQuery);
}

const OPERATE: Role[] = ['admin', 'operator'];
const ENQUEUE: Role[] = ['admin', 'operator', 'producer'];

/** What the session's role may do (API.md v1.1 roles): which controls exist at all. */
export function usePermissions() {
  const role = useSession().data?.role ?? null;
  return { role, canOperate: role !== null && OPERATE.includes(role), canEnqueue: role !== null && ENQUEUE.includes(role) };
}

export function useLogin() {
  const qc = useQueryClient();
  return useMutation({ mutationFn: (v: { username: string; password: string }) => login(v.username, v.password), onSuccess: () => qc.resetQueries() });
}

export function useLogout() {
  const qc = useQueryClient();
  return useMutation({ mutationFn: logout, onSuccess: () => qc.resetQueries() });
}
