import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * `api_keys`: the durable copy of every API key (src/auth/key-store.ts). Redis
 * is the lookup path; this table restores it and remembers revocations. Only
 * the SHA-256 of a secret is stored (hex), never the secret.
 */
export class ApiKeys1796001100000 implements MigrationInterface {
  name = 'ApiKeys1796001100000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE api_keys (
        id uuid PRIMARY KEY,
        project text NOT NULL,
        name text NOT NULL,
        role text NOT NULL CHECK (role IN ('admin', 'operator', 'producer', 'worker', 'viewer')),
        root boolean NOT NULL DEFAULT false,
        secret_sha256 char(64) NOT NULL UNIQUE,
        created_at timestamptz NOT NULL DEFAULT now(),
        expires_at timestamptz,
        revoked_at timestamptz
      )`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE IF EXISTS api_keys`);
  }
}
