import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Indexes and counters for the history queries (src/history), chosen
 * from the plans in docs/query-plans.md (1,000,000 jobs). Never edit a landed
 * migration: add a new one.
 *
 * Indexes: every list filter combination reads an ordered index range and
 * stops at LIMIT (no sort, no sequential scan).
 *
 * Counters: COUNT(*) of completed jobs is a scan of nearly the whole `jobs`
 * table (≈ 280 ms at 1M rows, growing with RETENTION_DAYS), so exact counts
 * are kept in two small tables by statement-level triggers, in the same
 * transaction as the change: `job_counts` always equals
 * `SELECT queue, status, count(*) FROM jobs GROUP BY 1, 2` and
 * `dead_letter_counts` equals `SELECT queue, count(*) FROM dead_letter_jobs
 * GROUP BY 1` (retention pruning decrements them like any delete). One
 * aggregated upsert per statement (transition tables), rows locked in
 * (queue, status) order so concurrent writers cannot deadlock on them; an
 * UPDATE that changes no status touches no counter row.
 */
export class HistoryQueries1796000300000 implements MigrationInterface {
  name = 'HistoryQueries1796000300000';

  async up(q: QueryRunner): Promise<void> {
    // Writers wait until this migration commits (CREATE INDEX blocks them anyway; the counter seed needs it).
    await q.query(`LOCK TABLE jobs, dead_letter_jobs IN SHARE ROW EXCLUSIVE MODE`);
    // GET /jobs?queue= newest first (jobs_queue_status_id cannot give id order across statuses: it sorted every job of the queue).
    await q.query(`CREATE INDEX jobs_queue_id ON jobs (queue, id DESC)`);
    // GET /jobs?status=&type= (was a BitmapAnd + sort), and ?queue=&status=&type= with queue as a filter (a type is normally
    // enqueued on one queue). GET /jobs?queue=&type= reads jobs_type_id with queue as a filter.
    await q.query(`CREATE INDEX jobs_type_status_id ON jobs (type, status, id DESC)`);
    // Tells the planner that type (nearly) determines queue, so queue+type estimates are not multiplied as if independent.
    await q.query(`CREATE STATISTICS jobs_queue_type_dep (dependencies) ON queue, type FROM jobs`);
    // GET /jobs/dlq/all?type= newest first (was a filter over the whole DLQ, or a sort).
    await q.query(`CREATE INDEX dead_letter_jobs_type_failed ON dead_letter_jobs (type, failed_at DESC, job_id DESC)`);
    // GET /jobs/dlq/all?queue=&type= newest first (was a BitmapAnd + sort). The DLQ is written only on failures: cheap.
    await q.query(`CREATE INDEX dead_letter_jobs_queue_type_failed ON dead_letter_jobs (queue, type, failed_at DESC, job_id DESC)`);
    // Same as jobs_queue_type_dep: without it queue+type estimates are ~10x low and the planner sorts a bitmap scan instead.
    await q.query(`CREATE STATISTICS dead_letter_jobs_queue_type_dep (dependencies) ON queue, type FROM dead_letter_jobs`);

    // Counters (below): the seed and the triggers must see the same rows.
    // counts by status of GET /queues and /dashboard/stats (completed, cancelled); the primary key serves the lookups.
    await q.query(`CREATE TABLE job_counts (queue text NOT NULL, status text NOT NULL, n bigint NOT NULL, PRIMARY KEY (queue, status))`);
    // counts.failed: the DLQ size per queue.
    await q.query(`CREATE TABLE dead_letter_counts (queue text PRIMARY KEY, n bigint NOT NULL)`);
    await q.query(`
      CREATE FUNCTION sluice_job_counts() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        IF TG_OP = 'TRUNCATE' THEN
          DELETE FROM job_counts;
        ELSIF TG_OP = 'INSERT' THEN
          INSERT INTO job_counts AS c (queue, status, n)
            SELECT queue, status, count(*) FROM new_rows GROUP BY 1, 2 ORDER BY 1, 2
            ON CONFLICT (queue, status) DO UPDATE SET n = c.n + EXCLUDED.n;
        ELSIF TG_OP = 'DELETE' THEN
          INSERT INTO job_counts AS c (queue, status, n)
            SELECT queue, status, -count(*) FROM old_rows GROUP BY 1, 2 ORDER BY 1, 2
            ON CONFLICT (queue, status) DO UPDATE SET n = c.n + EXCLUDED.n;
        ELSE
          INSERT INTO job_counts AS c (queue, status, n)
            SELECT queue, status, sum(d) FROM (
              SELECT queue, status, -1 AS d FROM old_rows UNION ALL SELECT queue, status, 1 FROM new_rows
            ) x GROUP BY 1, 2 HAVING sum(d) <> 0 ORDER BY 1, 2
            ON CONFLICT (queue, status) DO UPDATE SET n = c.n + EXCLUDED.n;
        END IF;
        RETURN NULL;
      END $$`);
    await q.query(`
      CREATE FUNCTION sluice_dead_letter_counts() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        IF TG_OP = 'TRUNCATE' THEN
          DELETE FROM dead_letter_counts;
        ELSIF TG_OP = 'INSERT' THEN
          INSERT INTO dead_letter_counts AS c (queue, n)
            SELECT queue, count(*) FROM new_rows GROUP BY 1 ORDER BY 1
            ON CONFLICT (queue) DO UPDATE SET n = c.n + EXCLUDED.n;
        ELSIF TG_OP = 'DELETE' THEN
          INSERT INTO dead_letter_counts AS c (queue, n)
            SELECT queue, -count(*) FROM old_rows GROUP BY 1 ORDER BY 1
            ON CONFLICT (queue) DO UPDATE SET n = c.n + EXCLUDED.n;
        ELSE
          INSERT INTO dead_letter_counts AS c (queue, n)
            SELECT queue, sum(d) FROM (SELECT queue, -1 AS d FROM old_rows UNION ALL SELECT queue, 1 FROM new_rows) x
            GROUP BY 1 HAVING sum(d) <> 0 ORDER BY 1
            ON CONFLICT (queue) DO UPDATE SET n = c.n + EXCLUDED.n;
        END IF;
        RETURN NULL;
      END $$`);
    // A trigger with transition tables has one event, hence one trigger per event.
    for (const [table, fn] of [['jobs', 'sluice_job_counts'], ['dead_letter_jobs', 'sluice_dead_letter_counts']]) {
      await q.query(`CREATE TRIGGER ${table}_count_ins AFTER INSERT ON ${table} REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION ${fn}()`);
      await q.query(`CREATE TRIGGER ${table}_count_upd AFTER UPDATE ON ${table} REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION ${fn}()`);
      await q.query(`CREATE TRIGGER ${table}_count_del AFTER DELETE ON ${table} REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION ${fn}()`);
      await q.query(`CREATE TRIGGER ${table}_count_trunc AFTER TRUNCATE ON ${table} FOR EACH STATEMENT EXECUTE FUNCTION ${fn}()`);
    }
    await q.query(`INSERT INTO job_counts (queue, status, n) SELECT queue, status, count(*) FROM jobs GROUP BY 1, 2`);
    await q.query(`INSERT INTO dead_letter_counts (queue, n) SELECT queue, count(*) FROM dead_letter_jobs GROUP BY 1`);
  }

  async down(q: QueryRunner): Promise<void> {
    for (const table of ['jobs', 'dead_letter_jobs']) {
      for (const ev of ['ins', 'upd', 'del', 'trunc']) await q.query(`DROP TRIGGER IF EXISTS ${table}_count_${ev} ON ${table}`);
    }
    await q.query(`DROP FUNCTION IF EXISTS sluice_job_counts()`);
    await q.query(`DROP FUNCTION IF EXISTS sluice_dead_letter_counts()`);
    await q.query(`DROP TABLE IF EXISTS job_counts`);
    await q.query(`DROP TABLE IF EXISTS dead_letter_counts`);
    await q.query(`DROP INDEX IF EXISTS dead_letter_jobs_queue_type_failed`);
    await q.query(`DROP INDEX IF EXISTS dead_letter_jobs_type_failed`);
    await q.query(`DROP STATISTICS IF EXISTS dead_letter_jobs_queue_type_dep`);
    await q.query(`DROP STATISTICS IF EXISTS jobs_queue_type_dep`);
    await q.query(`DROP INDEX IF EXISTS jobs_type_status_id`);
    await q.query(`DROP INDEX IF EXISTS jobs_queue_id`);
  }
}
