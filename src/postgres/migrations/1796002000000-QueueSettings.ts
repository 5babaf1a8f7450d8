import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * A copy of each queue's settings and per-key overrides (API.md v1.3 "Security and recovery rules made exact": Redis
 * holds nothing PostgreSQL cannot give back). Redis stays the live store; these rows are written after each change
 * (src/queues/settings-keeper.ts) and put back into Redis after it lost them (src/restore/loss-watch.ts).
 * - `queue_settings.settings`: the queue's configuration as one explicit change (every field present, null = not set):
 *   `{paused, external, maxConcurrency, rateLimit, defaults, keyConcurrency, keyRateLimit, fairness, agingMs}`.
 * - `queue_key_overrides`: one row per key with an override, `limits` = `{concurrency, rateLimit}`.
 */
export class QueueSettings1796002000000 implements MigrationInterface {
  name = 'QueueSettings1796002000000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`CREATE TABLE IF NOT EXISTS queue_settings (
      queue text PRIMARY KEY,
      settings jsonb NOT NULL,
      updated_at timestamptz NOT NULL DEFAULT now())`);
    await q.query(`CREATE TABLE IF NOT EXISTS queue_key_overrides (
      queue text NOT NULL,
      key text NOT NULL,
      limits jsonb NOT NULL,
      PRIMARY KEY (queue, key))`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE IF EXISTS queue_key_overrides`);
    await q.query(`DROP TABLE IF EXISTS queue_settings`);
  }
}
