import { MigrationInterface, QueryRunner } from 'typeorm';

/** `api_keys.rate_limit`: a key's own token bucket `{perSec, burst}` (src/auth/key-rate-limiter.ts); null = the KEY_RATE_LIMIT_* defaults. */
export class KeyRateLimits1796001310000 implements MigrationInterface {
  name = 'KeyRateLimits1796001310000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE api_keys ADD COLUMN rate_limit jsonb`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE api_keys DROP COLUMN IF EXISTS rate_limit`);
  }
}
