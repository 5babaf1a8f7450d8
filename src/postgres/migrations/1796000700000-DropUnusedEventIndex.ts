import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Drops `job_events_at`: no query reads it any more (retention deletes a
 * pruned job's events by `job_id`, through `job_events_job`), and every
 * mirrored event paid for its upkeep — one of the four index insertions per
 * `job_events` row on the audit writer's hot path.
 */
export class DropUnusedEventIndex1796000700000 implements MigrationInterface {
  name = 'DropUnusedEventIndex1796000700000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`DROP INDEX IF EXISTS job_events_at`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`CREATE INDEX IF NOT EXISTS job_events_at ON job_events (at)`);
  }
}
