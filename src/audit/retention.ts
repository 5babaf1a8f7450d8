import type { DataSource } from 'typeorm';

/**
 * Deletes history older than `retentionDays` from PostgreSQL in small
 * batches (each its own short statement, so no long locks): terminal jobs
 * finished before the cutoff with their events, executions and logs.
 * Jobs in the dead-letter queue are kept (their DLQ copy is the point).
 * @returns rows deleted from `jobs`.
 */
export async function pruneHistory(db: DataSource, retentionDays: number, batch = 1000, maxBatches = 100): Promise<number> {
  let total = 0;
  for (let i = 0; i < maxBatches; i++) {
    // TypeORM answers a DELETE with [rows, rowCount], not the rows alone.
    const out: [unknown[], number] | unknown[] = await db.query(
      `WITH old AS (
         SELECT id FROM jobs
         WHERE finished_at < now() - make_interval(days => $1) AND status IN ('completed', 'cancelled', 'failed')
           AND NOT EXISTS (SELECT 1 FROM dead_letter_jobs d WHERE d.job_id = jobs.id)
         LIMIT $2
       ), ev AS (DELETE FROM job_events WHERE job_id IN (SELECT id FROM old)),
          ex AS (DELETE FROM job_executions WHERE job_id IN (SELECT id FROM old)),
          lg AS (DELETE FROM job_logs WHERE job_id IN (SELECT id FROM old))
       DELETE FROM jobs WHERE id IN (SELECT id FROM old) RETURNING id`,
      [retentionDays, batch],
    );
    const count = Array.isArray(out[0]) && typeof out[1] === 'number' ? out[1] : out.length;
    total += count;
    if (count < batch) break;
  }
  return total;
}
