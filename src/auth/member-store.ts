import { randomBytes } from 'node:crypto';
import { v7 as uuidv7 } from 'uuid';
import type { DataSource, EntityManager } from 'typeorm';
import { hashSecret } from '../core/api-key';
import { memberProjectRole, type OrgRole, type Role } from '../core/access';
import { SluiceError } from '../core/errors';

/** How long an invitation token may be used, ms (API.md v1.3: 7 days). */
export const INVITE_TTL_MS = 7 * 24 * 3600 * 1000;

/** A member as `GET /orgs/:org/members` shows it. Times are ISO strings. */
export interface MemberView {
  id: string;
  username: string;
  org: string;
  orgRole: OrgRole;
  /** The roles given per project of the organization (an owner or admin is `admin` of every project whatever this says). */
  projects: Record<string, Role>;
  hidePayloads: boolean;
  /** True while the user has not set a password (an invitation is pending or expired). */
  invited: boolean;
  createdAt: string;
}

/** One project a user may act in, with its role there (`GET /auth/session` lists them). */
export interface ProjectAccess {
  name: string;
  org: string;
  role: Role;
  /** The member's `hidePayloads` in that project's organization. */
  hidePayloads: boolean;
}

/** An unknown organization, or one the caller is no member of (HTTP 404 `not_found`). */
export class OrgNotFoundError extends SluiceError {
  constructor(org: string) {
    super('not_found', `organization ${JSON.stringify(org.slice(0, 64))} not found`);
  }
}

/** No member of that name in the organization (HTTP 404 `not_found`). */
export class MemberNotFoundError extends SluiceError {
  constructor(username: string) {
    super('not_found', `member ${JSON.stringify(username.slice(0, 128))} not found`);
  }
}

interface MemberRow {
  id: string;
  username: string;
  org: string;
  org_role: OrgRole;
  hide_payloads: boolean;
  invited: boolean;
  created_at: Date;
  projects: Record<string, Role> | null;
}

const MEMBER_VIEW = `
  SELECT u.id, u.username, m.org, m.org_role, m.hide_payloads, u.password_hash IS NULL AS invited, m.created_at,
         (SELECT jsonb_object_agg(r.project, r.role) FROM user_roles r JOIN projects p ON p.name = r.project AND p.org = m.org
           WHERE r.user_id = u.id) AS projects
    FROM org_members m JOIN users u ON u.id = m.user_id`;

function view(r: MemberRow): MemberView {
  return {
    id: r.id,
    username: r.username,
    org: r.org,
    orgRole: r.org_role,
    projects: r.projects ?? {},
    hidePayloads: r.hide_payloads,
    invited: r.invited,
    createdAt: r.created_at.toISOString(),
  };
}

/** A new invitation token: `inv_` + 256 random bits (URL-safe). Only its SHA-256 is stored. */
export function newInviteToken(): string {
  return 'inv_' + randomBytes(32).toString('base64url');
}

/** The shape of an invitation token (anything else is refused before any lookup). */
export const INVITE_TOKEN_PATTERN = /^inv_[A-Za-z0-9_-]{43}$/;

/**
 * Members of organizations in PostgreSQL (`org_members`, `user_roles`,
 * `org_invitations`: migration 1796002200000-Organizations). Users are global
 * (one username, one password); a user is a member of any number of
 * organizations with one `orgRole` and `hidePayloads` each, and a role per
 * project of it in `user_roles`. Nothing here is cached in Redis: the guard
 * asks it on the organization routes, a login and a project switch; sessions
 * carry the role of their current project (a change ends them).
 */
export class MemberStore {
  constructor(
    private readonly db: DataSource,
    private readonly now: () => number = Date.now,
  ) {}

  /** Every project the user may act in, with its role there: `default` first, then by name. */
  async projectsOf(userId: string): Promise<ProjectAccess[]> {
    const rows: { name: string; org: string; org_role: OrgRole; hide_payloads: boolean; role: Role | null }[] = await this.db.query(
      `SELECT p.name, p.org, m.org_role, m.hide_payloads, r.role
         FROM org_members m JOIN projects p ON p.org = m.org
         LEFT JOIN user_roles r ON r.user_id = m.user_id AND r.project = p.name
        WHERE m.user_id = $1`,
      [userId],
    );
    const out: ProjectAccess[] = [];
    for (const r of rows) {
      const role = memberProjectRole(r.org_role, r.role);
      if (role) out.push({ name: r.name, org: r.org, role, hidePayloads: r.hide_payloads });
    }
    return out.sort((a, b) => (a.name === 'default' ? -1 : b.name === 'default' ? 1 : a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  }

  /** The user's role in the organization, or null when it is no member (or the organization does not exist). */
  async orgRoleOf(userId: string, org: string): Promise<OrgRole | null> {
    const rows: { org_role: OrgRole }[] = await this.db.query(`SELECT org_role FROM org_members WHERE user_id = $1 AND org = $2`, [userId, org]);
    return rows[0]?.org_role ?? null;
  }

  /** The organizations of a user with its role in each, by name. */
  async orgsOf(userId: string): Promise<{ name: string; orgRole: OrgRole; createdAt: string }[]> {
    const rows: { name: string; org_role: OrgRole; created_at: Date }[] = await this.db.query(
      `SELECT o.name, m.org_role, o.created_at FROM org_members m JOIN orgs o ON o.name = m.org WHERE m.user_id = $1 ORDER BY o.name`,
      [userId],
    );
    return rows.map((r) => ({ name: r.name, orgRole: r.org_role, createdAt: r.created_at.toISOString() }));
  }

  /** The members of `org`, oldest first. */
  async list(org: string): Promise<MemberView[]> {
    const rows: MemberRow[] = await this.db.query(`${MEMBER_VIEW} WHERE m.org = $1 ORDER BY m.created_at, u.id`, [org]);
    return rows.map(view);
  }

  /** The member of `org` with this username (without case), or null. */
  async get(org: string, username: string, m: EntityManager | DataSource = this.db): Promise<MemberView | null> {
    const rows: MemberRow[] = await m.query(`${MEMBER_VIEW} WHERE m.org = $1 AND lower(u.username) = lower($2)`, [org, username]);
    return rows.length ? view(rows[0]) : null;
  }

  /** The projects of `org` among `names` (to refuse a role in a project of another organization). */
  async projectsIn(org: string, names: string[]): Promise<Set<string>> {
    if (!names.length) return new Set();
    const rows: { name: string }[] = await this.db.query(`SELECT name FROM projects WHERE org = $1 AND name = ANY($2::text[])`, [org, names]);
    return new Set(rows.map((r) => r.name));
  }

  /**
   * Adds a member: an existing user (by username, without case) joins; a new
   * one is created without a password, with an invitation.
   * @returns the member, and the invitation token when the user is new (shown once).
   * @throws MemberExistsError (409) when the user is a member of `org` already.
   */
  async add(org: string, input: { username: string; orgRole: OrgRole; projects: Record<string, Role>; hidePayloads: boolean }): Promise<{ member: MemberView; inviteToken: string | null; inviteExpiresAt: string | null }> {
    return this.db.transaction(async (m) => {
      const found: { id: string }[] = await m.query(`SELECT id FROM users WHERE lower(username) = lower($1) FOR UPDATE`, [input.username]);
      let userId = found[0]?.id;
      let token: string | null = null;
      let expiresAt: Date | null = null;
      if (!userId) {
        userId = uuidv7();
        await m.query(`INSERT INTO users (id, username, password_hash) VALUES ($1, $2, NULL)`, [userId, input.username]);
      }
      const added: unknown[] = await m.query(
        `INSERT INTO org_members (org, user_id, org_role, hide_payloads) VALUES ($1, $2, $3, $4) ON CONFLICT (org, user_id) DO NOTHING RETURNING 1`,
        [org, userId, input.orgRole, input.hidePayloads],
      );
      if (!added.length) throw new MemberExistsError(input.username);
      await this.setProjects(m, org, userId, input.projects);
      if (!found.length) {
        token = newInviteToken();
        expiresAt = new Date(this.now() + INVITE_TTL_MS);
        await m.query(`INSERT INTO org_invitations (token_hash, org, user_id, expires_at) VALUES ($1, $2, $3, $4)`, [hashSecret(token), org, userId, expiresAt]);
      }
      const member = (await this.get(org, input.username, m)) as MemberView;
      return { member, inviteToken: token, inviteExpiresAt: expiresAt ? expiresAt.toISOString() : null };
    });
  }

  /**
   * Changes a member's organization role, project roles (the map replaces the
   * old one) or `hidePayloads`.
   * @param guard called inside the transaction with the member as it was, before anything changes
   *   (the owner rules): throw to refuse.
   * @returns the member as it was and as it is, or null when there is no such member.
   */
  async update(
    org: string,
    username: string,
    change: { orgRole?: OrgRole; projects?: Record<string, Role>; hidePayloads?: boolean },
    guard: (before: MemberView, owners: number) => void,
  ): Promise<{ before: MemberView; after: MemberView } | null> {
    return this.db.transaction(async (m) => {
      const before = await this.lockMember(m, org, username);
      if (!before) return null;
      guard(before, await this.owners(m, org));
      if (change.orgRole !== undefined || change.hidePayloads !== undefined) {
        await m.query(`UPDATE org_members SET org_role = COALESCE($3, org_role), hide_payloads = COALESCE($4, hide_payloads) WHERE org = $1 AND user_id = $2`, [
          org,
          before.id,
          change.orgRole ?? null,
          change.hidePayloads ?? null,
        ]);
      }
      if (change.projects !== undefined) {
        await m.query(`DELETE FROM user_roles r USING projects p WHERE r.user_id = $1 AND p.name = r.project AND p.org = $2`, [before.id, org]);
        await this.setProjects(m, org, before.id, change.projects);
      }
      return { before, after: (await this.get(org, username, m)) as MemberView };
    });
  }

  /**
   * Removes a member from `org` with its roles in the organization's projects
   * and its invitations there; a user left in no organization and with no role
   * anywhere is deleted.
   * @param guard as for {@link update}.
   * @returns the member as it was, or null when there is none.
   */
  async remove(org: string, username: string, guard: (before: MemberView, owners: number) => void): Promise<MemberView | null> {
    return this.db.transaction(async (m) => {
      const before = await this.lockMember(m, org, username);
      if (!before) return null;
      guard(before, await this.owners(m, org));
      await m.query(`DELETE FROM user_roles r USING projects p WHERE r.user_id = $1 AND p.name = r.project AND p.org = $2`, [before.id, org]);
      await m.query(`DELETE FROM org_invitations WHERE user_id = $1 AND org = $2`, [before.id, org]);
      await m.query(`DELETE FROM org_members WHERE user_id = $1 AND org = $2`, [before.id, org]);
      await m.query(
        `DELETE FROM users WHERE id = $1 AND NOT EXISTS (SELECT 1 FROM org_members WHERE user_id = $1) AND NOT EXISTS (SELECT 1 FROM user_roles WHERE user_id = $1)`,
        [before.id],
      );
      return before;
    });
  }

  /**
   * Uses an invitation: sets the user's password when the token is known,
   * unused and unexpired, and marks it used (single use, in one transaction).
   * @returns the user and organization, or null (unknown, used or expired: one answer for all).
   */
  async acceptInvite(token: string, passwordHash: string): Promise<{ userId: string; username: string; org: string } | null> {
    return this.db.transaction(async (m) => {
      const rows: { user_id: string; org: string }[] = await m.query(
        // WITH … SELECT: TypeORM answers a bare UPDATE … RETURNING with [rows, count].
        `WITH used AS (UPDATE org_invitations SET used_at = now() WHERE token_hash = $1 AND used_at IS NULL AND expires_at > $2 RETURNING user_id, org) SELECT * FROM used`,
        [hashSecret(token), new Date(this.now())],
      );
      if (!rows.length) return null;
      const u: { username: string }[] = await m.query(`WITH u AS (UPDATE users SET password_hash = $2, password_changed_at = now() WHERE id = $1 RETURNING username) SELECT * FROM u`, [rows[0].user_id, passwordHash]);
      if (!u.length) return null;
      // Other invitations of the same user are spent too: the password is set.
      await m.query(`UPDATE org_invitations SET used_at = now() WHERE user_id = $1 AND used_at IS NULL`, [rows[0].user_id]);
      return { userId: rows[0].user_id, username: u[0].username, org: rows[0].org };
    });
  }

  /** The organization of a project, or null when the project is unknown to PostgreSQL. */
  async orgOfProject(project: string): Promise<string | null> {
    const rows: { org: string }[] = await this.db.query(`SELECT org FROM projects WHERE name = $1`, [project]);
    return rows[0]?.org ?? null;
  }

  private async lockMember(m: EntityManager, org: string, username: string): Promise<MemberView | null> {
    // The organization's row is the lock: two changes of its owners never both see two owners left.
    await m.query(`SELECT 1 FROM orgs WHERE name = $1 FOR UPDATE`, [org]);
    return this.get(org, username, m);
  }

  private async owners(m: EntityManager, org: string): Promise<number> {
    const rows: { n: number }[] = await m.query(`SELECT count(*)::int AS n FROM org_members m JOIN users u ON u.id = m.user_id WHERE m.org = $1 AND m.org_role = 'owner'`, [org]);
    return rows[0].n;
  }

  private async setProjects(m: EntityManager, org: string, userId: string, projects: Record<string, Role>): Promise<void> {
    for (const [project, role] of Object.entries(projects)) {
      // Only the organization's projects (the service checked; the join keeps it true under a race).
      await m.query(
        `INSERT INTO user_roles (user_id, project, role) SELECT $1, p.name, $3 FROM projects p WHERE p.name = $2 AND p.org = $4
           ON CONFLICT (user_id, project) DO UPDATE SET role = EXCLUDED.role`,
        [userId, project, role, org],
      );
    }
  }
}

/** The user is a member of the organization already (HTTP 409 `conflict`). */
export class MemberExistsError extends SluiceError {
  constructor(username: string) {
    super('conflict', `${JSON.stringify(username.slice(0, 128))} is a member of this organization already (PATCH changes its roles)`);
  }
}
