import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * A job's `claimed` and `completed` events live in its execution's row
 * (issue 22, "the folded write model"; DESIGN.md "The mirror's write
 * model"): the two events of every processed job were two `job_events` rows
 * besides the execution row that already holds the same facts (when, which
 * worker, which attempt and execution). Measured on the real schema
 * (scripts/bench/write-models.js): 11.5 of PostgreSQL's 35.5 µs per
 * processed job were those two rows.
 * - `job_executions.claim_ms`, `claim_seq`: the stream entry id of the
 *   execution's `claimed` event, when the row holds it (null: the event is a
 *   `job_events` row — every execution mirrored before this version, and
 *   the rare second claim of one execution after Redis came back rewound).
 * - `end_ms`, `end_seq`, `result`: the same for its `completed` event, whose
 *   data (the handler's result) is `result`. Any other end (failed, stalled,
 *   released, cancelled, timeout) stays a `job_events` row.
 *   Nullable without a default: a catalog change only, no rewrite.
 * - `job_timeline`: every event of every job, the `job_events` rows and
 *   the events the execution rows hold, in the columns of `job_events`
 *   (`GET /jobs/:id/events` reads it, src/history/job-events.ts). A claimed
 *   event is always waiting → active with no reason, error nor data; a
 *   completed event active → completed with the result as its data
 *   (lua/claimJobs-8.lua, lua/completeJobs-5.lua emit nothing else). A read
 *   by `job_id` is a primary-key range scan of each table's one partition.
 */
export class FoldedExecutionEvents1796001900000 implements MigrationInterface {
  name = 'FoldedExecutionEvents1796001900000';

  async up(q: QueryRunner): Promise<void> {
    await q.query(
      `ALTER TABLE job_executions ADD COLUMN claim_ms bigint, ADD COLUMN claim_seq bigint, ADD COLUMN end_ms bigint, ADD COLUMN end_seq bigint, ADD COLUMN result text`,
    );
    await q.query(`
      CREATE VIEW job_timeline AS
        SELECT queue, stream_ms, stream_seq, job_id, at, event, from_status, to_status, attempt, execution_seq, worker_id, reason, error, data
        FROM job_events
        UNION ALL
        SELECT queue, claim_ms, claim_seq, job_id, started_at, 'claimed'::text, 'waiting'::text, 'active'::text, attempt, execution_seq, worker_id,
          NULL::text, NULL::text, NULL::text
        FROM job_executions WHERE claim_ms IS NOT NULL
        UNION ALL
        SELECT queue, end_ms, end_seq, job_id, finished_at, 'completed'::text, 'active'::text, 'completed'::text, attempt, execution_seq, worker_id,
          NULL::text, NULL::text, result
        FROM job_executions WHERE end_ms IS NOT NULL`);
  }

  async down(q: QueryRunner): Promise<void> {
    // The events the execution rows hold go back to job_events rows first, so nothing of the history is lost.
    await q.query(`
      INSERT INTO job_events (queue, stream_ms, stream_seq, job_id, at, event, from_status, to_status, attempt, execution_seq, worker_id, reason, error, data)
      SELECT queue, stream_ms, stream_seq, job_id, at, event, from_status, to_status, attempt, execution_seq, worker_id, reason, error, data
      FROM job_timeline t WHERE t.event IN ('claimed', 'completed')
      ON CONFLICT DO NOTHING`);
    await q.query(`DROP VIEW IF EXISTS job_timeline`);
    await q.query(
      `ALTER TABLE job_executions DROP COLUMN IF EXISTS result, DROP COLUMN IF EXISTS end_seq, DROP COLUMN IF EXISTS end_ms, DROP COLUMN IF EXISTS claim_seq, DROP COLUMN IF EXISTS claim_ms`,
    );
  }
}
