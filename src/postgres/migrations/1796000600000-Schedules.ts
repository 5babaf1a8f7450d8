import { MigrationInterface, QueryRunner } from 'typeorm';

/** `schedules`: cron schedules and their slot bookkeeping (src/postgres/entities/schedule.entity.ts). */
export class Schedules1796000600000 implements MigrationInterface {
  name = 'Schedules1796000600000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`
      CREATE TABLE schedules (
        id uuid PRIMARY KEY,
        name text NOT NULL UNIQUE,
        cron text NOT NULL,
        timezone text NOT NULL,
        queue text NOT NULL,
        type text NOT NULL,
        payload jsonb NOT NULL DEFAULT '{}',
        priority int NOT NULL DEFAULT 0,
        max_attempts int,
        backoff jsonb,
        timeout_ms int,
        enabled boolean NOT NULL DEFAULT true,
        next_run_at timestamptz,
        last_run_at timestamptz,
        last_slot timestamptz,
        claim_until timestamptz,
        last_job_id text,
        revision int NOT NULL DEFAULT 1,
        created_at timestamptz NOT NULL,
        updated_at timestamptz NOT NULL
      )`);
    // The scheduler's refresh reads enabled schedules; GET /schedules lists by creation.
    await q.query(`CREATE INDEX schedules_enabled_next ON schedules (next_run_at) WHERE enabled`);
    await q.query(`CREATE INDEX schedules_created ON schedules (created_at, id)`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`DROP TABLE IF EXISTS schedules`);
  }
}
