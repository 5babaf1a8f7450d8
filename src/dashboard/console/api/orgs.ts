import { client, unwrap } from './client';
import type { CreatedMember, Member, MemberRole, Org, OrgRole, Session } from './types';

/** A member's changeable fields (`POST` and `PATCH /orgs/:org/members…`). */
export interface MemberFields {
  orgRole?: OrgRole;
  projects?: Record<string, MemberRole>;
  hidePayloads?: boolean;
}

export const switchProject = (project: string) => unwrap<Session>(client.POST('/auth/project', { body: { project } }));
export const acceptInvite = (token: string, password: string) => unwrap<unknown>(client.POST('/auth/accept-invite', { body: { token, password } }));
export const listOrgs = () => unwrap<Org[]>(client.GET('/orgs'));
export const listMembers = (org: string) => unwrap<Member[]>(client.GET('/orgs/{org}/members', { params: { path: { org } } }));
export const addMember = (org: string, body: MemberFields & { username: string; orgRole: OrgRole }) =>
  unwrap<CreatedMember>(client.POST('/orgs/{org}/members', { params: { path: { org } }, body }));
export const updateMember = (org: string, username: string, body: MemberFields) =>
  unwrap<Member>(client.PATCH('/orgs/{org}/members/{username}', { params: { path: { org, username } }, body }));
export const removeMember = (org: string, username: string) => unwrap<unknown>(client.DELETE('/orgs/{org}/members/{username}', { params: { path: { org, username } } }));
