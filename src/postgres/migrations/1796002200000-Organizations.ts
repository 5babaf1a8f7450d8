import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Organizations and members (API.md v1.3; docs/security.md, "Organizations and members"):
 * - `orgs (name, created_at)`: `default` always exists and is inserted here;
 * - `projects.org`: every project belongs to one organization; today's are `default`'s;
 * - `org_members (org, user_id, org_role, hide_payloads)`: a user's membership of an
 *   organization. Every user with a role in a project today becomes a `member` of
 *   `default` (a member's project roles are exactly its `user_roles` rows, so every
 *   role stays as it was); a user with no role anywhere (none exist today: removing
 *   the last role deletes the user) gets nothing;
 * - `users.password_hash` may be NULL: an invited user who has not set a password yet
 *   (no login matches it);
 * - `org_invitations`: one-time invite tokens, stored as SHA-256, with their expiry and use.
 * `user_roles` stays the per-project role table (of members and of `/users`).
 */
export class Organizations1796002200000 implements MigrationInterface {
  name = 'Organizations1796002200000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`CREATE TABLE orgs (name text PRIMARY KEY, created_at timestamptz NOT NULL DEFAULT now())`);
    await q.query(`INSERT INTO orgs (name, created_at) SELECT 'default', COALESCE((SELECT created_at FROM projects WHERE name = 'default'), now())`);
    await q.query(`ALTER TABLE projects ADD COLUMN org text NOT NULL DEFAULT 'default' REFERENCES orgs (name)`);
    await q.query(`CREATE INDEX projects_org ON projects (org, name)`);
    await q.query(`
      CREATE TABLE org_members (
        org text NOT NULL REFERENCES orgs (name),
        user_id uuid NOT NULL REFERENCES users (id) ON DELETE CASCADE,
        org_role text NOT NULL CHECK (org_role IN ('owner', 'admin', 'member', 'viewer')),
        hide_payloads boolean NOT NULL DEFAULT false,
        created_at timestamptz NOT NULL DEFAULT now(),
        PRIMARY KEY (org, user_id)
      )`);
    await q.query(`CREATE INDEX org_members_user ON org_members (user_id, org)`);
    // Today's users: members of `default` with their project roles unchanged (user_roles rows stay).
    await q.query(`INSERT INTO org_members (org, user_id, org_role, created_at)
                     SELECT 'default', u.id, 'member', u.created_at FROM users u
                      WHERE EXISTS (SELECT 1 FROM user_roles r WHERE r.user_id = u.id)`);
    await q.query(`ALTER TABLE users ALTER COLUMN password_hash DROP NOT NULL`);
    await q.query(`
      CREATE TABLE org_invitations (
        token_hash text PRIMARY KEY CHECK (token_hash ~ '^[0-9a-f]{64}$'),
        org text NOT NULL REFERENCES orgs (name),
        user_id uuid NOT NULL REFERENCES users (id) ON DELETE CASCADE,
        created_at timestamptz NOT NULL DEFAULT now(),
        expires_at timestamptz NOT NULL,
        used_at timestamptz
      )`);
    await q.query(`CREATE INDEX org_invitations_user ON org_invitations (user_id, org)`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE IF EXISTS org_invitations`);
    // Users who never set a password cannot exist in the version before.
    await q.query(`DELETE FROM users WHERE password_hash IS NULL`);
    await q.query(`ALTER TABLE users ALTER COLUMN password_hash SET NOT NULL`);
    await q.query(`DROP TABLE IF EXISTS org_members`);
    await q.query(`DROP INDEX IF EXISTS projects_org`);
    await q.query(`ALTER TABLE projects DROP COLUMN IF EXISTS org`);
    await q.query(`DROP TABLE IF EXISTS orgs`);
  }
}
