import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * `job_events` and `job_logs` are keyed by their stream entry id
 * (queue, stream_ms, stream_seq), which was already unique: the surrogate
 * bigserial keys go. Every mirrored event paid for them — a sequence
 * `nextval` and one more index insertion per row on the audit writer's hot
 * path (≈ 12 % of PostgreSQL's CPU per mirrored event, docs/benchmarks.md) — and no query reads them: an event's `seq` in the API
 * is its position in the job's timeline (src/history/job-events.ts).
 * DROP COLUMN is a catalog change; the primary key reuses the unique index,
 * so neither rewrites the table nor rebuilds an index (the key keeps the
 * index's name, which docs/query-plans.md uses).
 */
export class StreamEntryKeys1796000800000 implements MigrationInterface {
  name = 'StreamEntryKeys1796000800000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE job_events DROP COLUMN seq`);
    await q.query(`ALTER TABLE job_events ADD CONSTRAINT job_events_stream_entry PRIMARY KEY USING INDEX job_events_stream_entry`);
    await q.query(`ALTER TABLE job_logs DROP COLUMN id`);
    await q.query(`ALTER TABLE job_logs ADD CONSTRAINT job_logs_stream_entry PRIMARY KEY USING INDEX job_logs_stream_entry`);
  }

  async down(q: QueryRunner): Promise<void> {
    await q.query(`ALTER TABLE job_logs DROP CONSTRAINT job_logs_stream_entry`);
    await q.query(`CREATE UNIQUE INDEX job_logs_stream_entry ON job_logs (queue, stream_ms, stream_seq)`);
    await q.query(`ALTER TABLE job_logs ADD COLUMN id bigserial PRIMARY KEY`);
    await q.query(`ALTER TABLE job_events DROP CONSTRAINT job_events_stream_entry`);
    await q.query(`CREATE UNIQUE INDEX job_events_stream_entry ON job_events (queue, stream_ms, stream_seq)`);
    await q.query(`ALTER TABLE job_events ADD COLUMN seq bigserial PRIMARY KEY`);
  }
}
