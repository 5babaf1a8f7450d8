import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Four of the seven secondary indexes of `jobs` go: every job row the audit
 * writer inserts, and every status change it applies (an UPDATE that moves
 * the row: status and times are indexed, so it is never HOT), paid one
 * index insertion for each. Measured on 1,000-row batches (server-side
 * execution time, medians of 25): insert 17.0 → 10.9 ms, status-changing
 * update 24.7 → 16.0 ms, with the three indexes left.
 *
 * What served what, and what serves it now (docs/query-plans.md):
 * - `jobs_queue_id (queue, id DESC)`, `?queue=` (also with `type`): a Merge
 *   Append of six LIMITed scans, one per status, of `jobs_queue_status_id`
 *   (or, with a type, `jobs_type_status_id`) — src/history/list-jobs.ts;
 * - `jobs_type_id (type, id DESC)`, `?type=`: the same over `jobs_type_status_id`;
 * - `jobs_status_id (status, id DESC)`, `?status=`: one LIMITed scan of
 *   `jobs_queue_status_id` per queue that has (had) jobs of that status
 *   (the rows of `job_counts`), then a top-N sort of at most queues × limit rows;
 * - `jobs_finished_at` (partial), retention and throughput: retention walks
 *   the primary key up to the cutoff (UUIDv7 ids start with their creation
 *   time, and a job finishes after it is created), throughput reads the
 *   per-second counters below.
 *
 * `job_finishes` (bucket second, queue): jobs that are completed / failed,
 * by the second of `finished_at`, kept by a statement-level trigger in the
 * same transaction as the change, like `job_counts`: a row entering the
 * status adds 1, a row leaving it (a DLQ retry, a later correction)
 * subtracts 1, so the sum over a window equals
 * `count(*) … WHERE finished_at in the window GROUP BY status` of the rows
 * as they are now — what the dropped index answered. Deletes (retention,
 * only rows older than RETENTION_DAYS ≥ 1) do not touch it: the buckets
 * only serve the last minute, and the retention pass drops buckets older
 * than an hour. Keyed (bucket, queue): a writer owns its queues, so two
 * writers never wait on one counter row.
 */
export class LeanJobIndexes1796000900000 implements MigrationInterface {
  name = 'LeanJobIndexes1796000900000';

  async up(q: QueryRunner): Promise<void> {
    // Writers wait until this commits (the seed and the trigger must see the same rows).
    await q.query(`LOCK TABLE jobs IN SHARE ROW EXCLUSIVE MODE`);
    for (const index of ['jobs_queue_id', 'jobs_type_id', 'jobs_status_id', 'jobs_finished_at']) await q.query(`DROP INDEX IF EXISTS ${index}`);
    await q.query(`CREATE TABLE job_finishes (bucket timestamptz NOT NULL, queue text NOT NULL, completed int NOT NULL, failed int NOT NULL, PRIMARY KEY (bucket, queue))`);
    await q.query(`
      CREATE FUNCTION sluice_job_finishes() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        IF TG_OP = 'TRUNCATE' THEN
          DELETE FROM job_finishes;
        ELSIF TG_OP = 'INSERT' THEN
          INSERT INTO job_finishes AS f (bucket, queue, completed, failed)
            SELECT date_trunc('second', finished_at), queue, count(*) FILTER (WHERE status = 'completed'), count(*) FILTER (WHERE status = 'failed')
            FROM new_rows WHERE status IN ('completed', 'failed') AND finished_at IS NOT NULL
            GROUP BY 1, 2 ORDER BY 1, 2
            ON CONFLICT (bucket, queue) DO UPDATE SET completed = f.completed + EXCLUDED.completed, failed = f.failed + EXCLUDED.failed;
        ELSE
          INSERT INTO job_finishes AS f (bucket, queue, completed, failed)
            SELECT b, queue, sum(c), sum(fl) FROM (
              SELECT date_trunc('second', finished_at) AS b, queue, (status = 'completed')::int AS c, (status = 'failed')::int AS fl
              FROM new_rows WHERE status IN ('completed', 'failed') AND finished_at IS NOT NULL
              UNION ALL
              SELECT date_trunc('second', finished_at), queue, -(status = 'completed')::int, -(status = 'failed')::int
              FROM old_rows WHERE status IN ('completed', 'failed') AND finished_at IS NOT NULL
            ) x GROUP BY 1, 2 HAVING sum(c) <> 0 OR sum(fl) <> 0 ORDER BY 1, 2
            ON CONFLICT (bucket, queue) DO UPDATE SET completed = f.completed + EXCLUDED.completed, failed = f.failed + EXCLUDED.failed;
        END IF;
        RETURN NULL;
      END $$`);
    await q.query(`CREATE TRIGGER jobs_finishes_ins AFTER INSERT ON jobs REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION sluice_job_finishes()`);
    await q.query(
      `CREATE TRIGGER jobs_finishes_upd AFTER UPDATE ON jobs REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION sluice_job_finishes()`,
    );
    await q.query(`CREATE TRIGGER jobs_finishes_trunc AFTER TRUNCATE ON jobs FOR EACH STATEMENT EXECUTE FUNCTION sluice_job_finishes()`);
    // The last hour's finishes (the buckets serve the last minute): a scan of `jobs`, once.
    await q.query(`
      INSERT INTO job_finishes (bucket, queue, completed, failed)
      SELECT date_trunc('second', finished_at), queue, count(*) FILTER (WHERE status = 'completed'), count(*) FILTER (WHERE status = 'failed')
      FROM jobs WHERE status IN ('completed', 'failed') AND finished_at > now() - interval '1 hour'
      GROUP BY 1, 2`);
  }

  async down(q: QueryRunner): Promise<void> {
    for (const ev of ['ins', 'upd', 'trunc']) await q.query(`DROP TRIGGER IF EXISTS jobs_finishes_${ev} ON jobs`);
    await q.query(`DROP FUNCTION IF EXISTS sluice_job_finishes()`);
    await q.query(`DROP TABLE IF EXISTS job_finishes`);
    await q.query(`CREATE INDEX IF NOT EXISTS jobs_finished_at ON jobs (finished_at) WHERE finished_at IS NOT NULL`);
    await q.query(`CREATE INDEX IF NOT EXISTS jobs_status_id ON jobs (status, id DESC)`);
    await q.query(`CREATE INDEX IF NOT EXISTS jobs_type_id ON jobs (type, id DESC)`);
    await q.query(`CREATE INDEX IF NOT EXISTS jobs_queue_id ON jobs (queue, id DESC)`);
  }
}
