import { Injectable } from '@nestjs/common';
import { MEMBER_ROLES, type OrgRole, type Role } from '../core/access';
import { ForbiddenError, SluiceError, ValidationError } from '../core/errors';
import { isProjectName } from '../core/project-queue';
import { passwordProblem, USERNAME_PATTERN } from '../core/user-credentials';
import { MEMBER_PROJECTS_MAX, type AcceptInviteDto, type CreateMemberDto, type UpdateMemberDto } from './dto/orgs.dto';
import { INVITE_TOKEN_PATTERN, MemberNotFoundError, MemberStore, OrgNotFoundError, type MemberView } from './member-store';
import { OrgStore, type OrgRecord } from './org-store';
import { hashPassword } from './password-hasher';
import type { Principal } from './principal';
import { SessionStore } from './session-store';

/** `POST /orgs/:org/members` answer: the member, with its invitation when the user is new. */
export type CreatedMember = MemberView & { inviteToken?: string; inviteExpiresAt?: string };

/** One answer for every invitation that cannot be used (unknown, used, expired, malformed): no enumeration. */
export const INVITE_REFUSED = 'unknown, used or expired invitation';

/** Removing or demoting the organization's last owner (HTTP 409 `conflict`). */
export class LastOwnerError extends SluiceError {
  constructor() {
    super('conflict', 'the organization needs an owner: make another member owner first');
  }
}

/**
 * Organizations and their members (API.md v1.3). Who may call each route is
 * the guard's (`root`, `user`, `org-admin`); here are the rules about the
 * data: only an owner (or a root key) gives, changes or removes the `owner`
 * role; the last owner stays; project roles only in the organization's
 * projects. A change or removal ends the member's sessions at once (every
 * session of that user: it holds the role of its current project).
 */
@Injectable()
export class OrgsService {
  constructor(
    private readonly orgs: OrgStore,
    private readonly members: MemberStore,
    private readonly sessions: SessionStore,
  ) {}

  /** `GET /orgs`: a root key sees every organization, a user its own (with its role). */
  async list(p: Principal): Promise<OrgRecord[]> {
    if (p.root) return this.orgs.list();
    return p.userId ? this.members.orgsOf(p.userId) : [];
  }

  /** @throws OrgNotFoundError (a root key naming an unknown organization). */
  async listMembers(p: Principal, org: string): Promise<MemberView[]> {
    await this.mustExist(p, org);
    return this.members.list(org);
  }

  /**
   * @throws ValidationError (projects), ForbiddenError (an admin making an owner), MemberExistsError (409).
   */
  async addMember(p: Principal, org: string, body: CreateMemberDto): Promise<CreatedMember> {
    await this.mustExist(p, org);
    const projects = await this.checkProjects(org, body.projects);
    if (body.orgRole === 'owner' && !isOwner(p)) throw new ForbiddenError('only an owner makes an owner');
    const r = await this.members.add(org, { username: body.username, orgRole: body.orgRole, projects, hidePayloads: body.hidePayloads ?? false });
    return r.inviteToken ? { ...r.member, inviteToken: r.inviteToken, inviteExpiresAt: r.inviteExpiresAt as string } : r.member;
  }

  /** @throws MemberNotFoundError, ValidationError, ForbiddenError (owner rules), LastOwnerError (409). */
  async updateMember(p: Principal, org: string, username: string, body: UpdateMemberDto): Promise<MemberView> {
    await this.mustExist(p, org);
    if (!USERNAME_PATTERN.test(username)) throw new MemberNotFoundError(username);
    if (body.orgRole === undefined && body.projects === undefined && body.hidePayloads === undefined) {
      throw new ValidationError('invalid request: nothing to change', [{ path: '', message: 'give at least one of orgRole, projects, hidePayloads' }]);
    }
    const projects = body.projects === undefined ? undefined : await this.checkProjects(org, body.projects);
    const r = await this.members.update(org, username, { orgRole: body.orgRole, projects, hidePayloads: body.hidePayloads }, (before, owners) => {
      const touchesOwner = before.orgRole === 'owner' || body.orgRole === 'owner';
      if (touchesOwner && !isOwner(p)) throw new ForbiddenError('only an owner changes an owner or makes one');
      if (before.orgRole === 'owner' && body.orgRole !== undefined && body.orgRole !== 'owner' && owners <= 1) throw new LastOwnerError();
    });
    if (!r) throw new MemberNotFoundError(username);
    // After the commit: a login racing with it re-reads the roles once its session is listed (LoginService).
    await this.sessions.revokeUser(r.after.id);
    return r.after;
  }

  /** @throws MemberNotFoundError, ForbiddenError (an admin removing an owner), LastOwnerError (409). */
  async removeMember(p: Principal, org: string, username: string): Promise<MemberView & { removed: true }> {
    await this.mustExist(p, org);
    if (!USERNAME_PATTERN.test(username)) throw new MemberNotFoundError(username);
    const before = await this.members.remove(org, username, (m, owners) => {
      if (m.orgRole === 'owner' && !isOwner(p)) throw new ForbiddenError('only an owner removes an owner');
      if (m.orgRole === 'owner' && owners <= 1) throw new LastOwnerError();
    });
    if (!before) throw new MemberNotFoundError(username);
    await this.sessions.revokeUser(before.id);
    return { ...before, removed: true };
  }

  /**
   * `POST /auth/accept-invite`: the password rules first (a refused password
   * spends nothing), then the token; the hash is made before the lookup, so
   * every token costs the same.
   * @throws ValidationError naming `password`, or naming `token` with {@link INVITE_REFUSED}.
   */
  async acceptInvite(body: AcceptInviteDto): Promise<{ user: { id: string; username: string }; org: string }> {
    const problem = passwordProblem(body.password);
    if (problem) throw new ValidationError('invalid request: password', [{ path: 'password', message: problem }]);
    const hash = await hashPassword(body.password);
    const r = INVITE_TOKEN_PATTERN.test(body.token) ? await this.members.acceptInvite(body.token, hash) : null;
    if (!r) throw new ValidationError(`invalid request: token`, [{ path: 'token', message: INVITE_REFUSED }]);
    return { user: { id: r.userId, username: r.username }, org: r.org };
  }

  /**
   * A root key may name any organization; the guard already found a user's membership.
   * @throws OrgNotFoundError (404).
   */
  async mustExist(p: Principal, org: string): Promise<void> {
    if (p.root && !(await this.orgs.exists(org))) throw new OrgNotFoundError(org);
  }

  /** @throws ValidationError naming `projects.<name>` for a bad role, a name of no project of `org`, or too many. */
  private async checkProjects(org: string, projects: Record<string, Role> | undefined): Promise<Record<string, Role>> {
    if (projects === undefined) return {};
    const names = Object.keys(projects);
    if (names.length > MEMBER_PROJECTS_MAX) throw new ValidationError('invalid request: projects', [{ path: 'projects', message: `at most ${MEMBER_PROJECTS_MAX} projects` }]);
    const bad: { path: string; message: string }[] = [];
    for (const n of names) {
      if (!isProjectName(n)) bad.push({ path: `projects.${String(n).slice(0, 64)}`, message: 'is not a project name' });
      else if (!(MEMBER_ROLES as readonly string[]).includes(projects[n] as string)) bad.push({ path: `projects.${n}`, message: `must be one of ${MEMBER_ROLES.join(', ')}` });
    }
    if (!bad.length) {
      const known = await this.members.projectsIn(org, names);
      for (const n of names) if (!known.has(n)) bad.push({ path: `projects.${n}`, message: `no project of organization ${org} has this name` });
    }
    if (bad.length) throw new ValidationError(`invalid request: ${bad.map((b) => b.path).join(', ')}`, bad);
    return projects;
  }
}

function isOwner(p: Principal): boolean {
  return p.root || (p.orgRole as OrgRole | undefined) === 'owner';
}
