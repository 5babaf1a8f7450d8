import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Dashboard users (src/auth/user-store.ts): `users` holds each login with
 * its argon2id hash (a PHC string, never the password); usernames are unique
 * whatever their case. `user_roles` gives a user one role per project.
 */
export class Users1796001200000 implements MigrationInterface {
  name = 'Users1796001200000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE users (
        id uuid PRIMARY KEY,
        username text NOT NULL CHECK (char_length(username) BETWEEN 1 AND 128),
        password_hash text NOT NULL CHECK (password_hash LIKE '$argon2%'),
        created_at timestamptz NOT NULL DEFAULT now(),
        password_changed_at timestamptz NOT NULL DEFAULT now(),
        disabled_at timestamptz
      )`);
    await q.query(`CREATE UNIQUE INDEX users_username_lower ON users (lower(username))`);
    await q.query(`
      CREATE TABLE user_roles (
        user_id uuid NOT NULL REFERENCES users (id) ON DELETE CASCADE,
        project text NOT NULL,
        role text NOT NULL CHECK (role IN ('admin', 'operator', 'producer', 'worker', 'viewer')),
        PRIMARY KEY (user_id, project)
      )`);
    await q.query(`CREATE INDEX user_roles_project ON user_roles (project, user_id)`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE IF EXISTS user_roles`);
    await q.query(`DROP TABLE IF EXISTS users`);
  }
}
