import { v7 as uuidv7 } from 'uuid';
import type { DataSource } from 'typeorm';
import type { Role } from '../core/access';
import { SluiceError } from '../core/errors';

/** A user as the API shows it, within one project: never the password hash. Times are ISO strings. */
export interface UserView {
  id: string;
  username: string;
  project: string;
  role: Role;
  createdAt: string;
  /** When the user was disabled (cannot log in, sessions revoked); null = enabled. */
  disabledAt: string | null;
}

/** What a login needs to know about a user: the hash and every role. */
export interface LoginUser {
  id: string;
  username: string;
  /** null: an invited user who has not set a password (no login matches). */
  passwordHash: string | null;
  disabled: boolean;
  /** project → role. */
  roles: Map<string, Role>;
}

interface Row {
  id: string;
  username: string;
  project: string;
  role: Role;
  created_at: Date;
  disabled_at: Date | null;
}

const VIEW = `SELECT u.id, u.username, r.project, r.role, u.created_at, u.disabled_at FROM users u JOIN user_roles r ON r.user_id = u.id`;

function view(r: Row): UserView {
  return { id: r.id, username: r.username, project: r.project, role: r.role, createdAt: r.created_at.toISOString(), disabledAt: r.disabled_at ? r.disabled_at.toISOString() : null };
}

/** Duplicate username (HTTP 409 `conflict`). */
export class UsernameTakenError extends SluiceError {
  constructor() {
    super('conflict', 'a user with this username already exists (usernames are compared without case)');
  }
}

/**
 * Dashboard users in PostgreSQL (`users`, `user_roles`: migration
 * 1796001200000-Users; each is a member of its projects' organizations, `org_members`). Users are global (one username, one password);
 * roles are per project. Every method that takes a `project` only sees users
 * with a role in it. Password hashes come in already hashed (argon2id PHC
 * strings, src/auth/password-hasher.ts); this store never sees a password.
 */
export class UserStore {
  constructor(private readonly db: DataSource) {}

  /**
   * Creates a user with one role in `project`.
   * @throws UsernameTakenError when the username exists in any case.
   */
  async create(input: { username: string; passwordHash: string; project: string; role: Role }): Promise<UserView> {
    const id = uuidv7();
    try {
      await this.db.transaction(async (m) => {
        await m.query(`INSERT INTO users (id, username, password_hash) VALUES ($1, $2, $3)`, [id, input.username, input.passwordHash]);
        await m.query(`INSERT INTO user_roles (user_id, project, role) VALUES ($1, $2, $3)`, [id, input.project, input.role]);
        // API.md v1.3: a user of a project is a member of the project's organization (a root key's
        // project may be one PostgreSQL does not list yet: then `default`'s).
        await m.query(
          `INSERT INTO org_members (org, user_id, org_role) VALUES (COALESCE((SELECT org FROM projects WHERE name = $2), 'default'), $1, 'member') ON CONFLICT DO NOTHING`,
          [id, input.project],
        );
      });
    } catch (e) {
      if ((e as { code?: string }).code === '23505') throw new UsernameTakenError();
      throw e;
    }
    return (await this.get(id, input.project)) as UserView;
  }

  /** The users with a role in `project`, oldest first. */
  async list(project: string): Promise<UserView[]> {
    const rows: Row[] = await this.db.query(`${VIEW} WHERE r.project = $1 ORDER BY u.id`, [project]);
    return rows.map(view);
  }

  /** The user with this id if it has a role in `project`, else null. */
  async get(id: string, project: string): Promise<UserView | null> {
    const rows: Row[] = await this.db.query(`${VIEW} WHERE u.id = $1 AND r.project = $2`, [id, project]);
    return rows.length ? view(rows[0]) : null;
  }

  /** True when the user also has a role in a project other than `project`. */
  async inOtherProjects(id: string, project: string): Promise<boolean> {
    const rows: unknown[] = await this.db.query(`SELECT 1 FROM user_roles WHERE user_id = $1 AND project <> $2 LIMIT 1`, [id, project]);
    return rows.length > 0;
  }

  /** The user a login names (username without case), with every role, or null. */
  async findForLogin(username: string): Promise<LoginUser | null> {
    const rows: { id: string; username: string; password_hash: string | null; disabled: boolean; project: string | null; role: Role | null }[] = await this.db.query(
      `SELECT u.id, u.username, u.password_hash, u.disabled_at IS NOT NULL AS disabled, r.project, r.role
         FROM users u LEFT JOIN user_roles r ON r.user_id = u.id WHERE lower(u.username) = lower($1)`,
      [username],
    );
    if (!rows.length) return null;
    const roles = new Map<string, Role>();
    for (const r of rows) if (r.project !== null && r.role !== null) roles.set(r.project, r.role);
    return { id: rows[0].id, username: rows[0].username, passwordHash: rows[0].password_hash, disabled: rows[0].disabled, roles };
  }

  /**
   * Changes a user of `project`: its role there, its password hash, whether it is disabled.
   * @returns the user after the change, or null when it has no role in `project`.
   */
  async update(id: string, project: string, change: { role?: Role; passwordHash?: string; disabled?: boolean }): Promise<UserView | null> {
    return this.db.transaction(async (m) => {
      const found: unknown[] = await m.query(`SELECT 1 FROM user_roles WHERE user_id = $1 AND project = $2 FOR UPDATE`, [id, project]);
      if (!found.length) return null;
      if (change.role !== undefined) await m.query(`UPDATE user_roles SET role = $3 WHERE user_id = $1 AND project = $2`, [id, project, change.role]);
      if (change.passwordHash !== undefined) await m.query(`UPDATE users SET password_hash = $2, password_changed_at = now() WHERE id = $1`, [id, change.passwordHash]);
      if (change.disabled === true) await m.query(`UPDATE users SET disabled_at = COALESCE(disabled_at, now()) WHERE id = $1`, [id]);
      if (change.disabled === false) await m.query(`UPDATE users SET disabled_at = NULL WHERE id = $1`, [id]);
      const rows: Row[] = await m.query(`${VIEW} WHERE u.id = $1 AND r.project = $2`, [id, project]);
      return view(rows[0]);
    });
  }

  /** Stores a new hash of the same password (parameters raised), unless the password changed meanwhile. */
  async rehash(id: string, oldHash: string, newHash: string): Promise<void> {
    await this.db.query(`UPDATE users SET password_hash = $3 WHERE id = $1 AND password_hash = $2`, [id, oldHash, newHash]);
  }

  /**
   * Removes a user from `project`; a user left with no role anywhere is deleted.
   * @returns the user as it was, or null when it had no role in `project`.
   */
  async remove(id: string, project: string): Promise<UserView | null> {
    return this.db.transaction(async (m) => {
      const rows: Row[] = await m.query(`${VIEW} WHERE u.id = $1 AND r.project = $2 FOR UPDATE OF r`, [id, project]);
      if (!rows.length) return null;
      await m.query(`DELETE FROM user_roles WHERE user_id = $1 AND project = $2`, [id, project]);
      // A plain member left with no role in the project's organization leaves it; then a user in no
      // organization and with no role is deleted (as before organizations).
      await m.query(
        `DELETE FROM org_members om WHERE om.user_id = $1 AND om.org_role = 'member'
            AND om.org = COALESCE((SELECT org FROM projects WHERE name = $2), 'default')
            AND NOT EXISTS (SELECT 1 FROM user_roles r JOIN projects p ON p.name = r.project WHERE r.user_id = $1 AND p.org = om.org)`,
        [id, project],
      );
      await m.query(
        `DELETE FROM users WHERE id = $1 AND NOT EXISTS (SELECT 1 FROM user_roles WHERE user_id = $1) AND NOT EXISTS (SELECT 1 FROM org_members WHERE user_id = $1)`,
        [id],
      );
      return view(rows[0]);
    });
  }
}
