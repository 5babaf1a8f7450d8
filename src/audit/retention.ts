import type { DataSource } from 'typeorm';

/** SQLSTATEs (PostgreSQL manual, appendix A) that mean "the pruner lost a lock race": give way, try next pass. */
const LOCK_NOT_AVAILABLE = '55P03';
const DEADLOCK_DETECTED = '40P01';

/**
 * How long one prune statement waits for a lock before it gives way (ms).
 * Shorter than PostgreSQL's default deadlock_timeout (1 s), so when the
 * pruner and an audit writer wait on each other (the writer on a `jobs` row
 * the prune is deleting, the prune on a `job_counts` row the writer's
 * earlier statement updated) the prune always gives up first: the writer's
 * batch is delayed by at most this, never aborted.
 */
export const PRUNE_LOCK_TIMEOUT_MS = 200;

const PRUNE_SQL = `WITH old AS MATERIALIZED (
   SELECT id FROM jobs
   WHERE finished_at < now() - make_interval(days => $1) AND status IN ('completed', 'cancelled', 'failed')
     AND NOT EXISTS (SELECT 1 FROM dead_letter_jobs d WHERE d.job_id = jobs.id)
   LIMIT $2
   FOR UPDATE OF jobs SKIP LOCKED
 ), ev AS (DELETE FROM job_events WHERE job_id IN (SELECT id FROM old)),
    ex AS (DELETE FROM job_executions WHERE job_id IN (SELECT id FROM old)),
    lg AS (DELETE FROM job_logs WHERE job_id IN (SELECT id FROM old))
 DELETE FROM jobs WHERE id IN (SELECT id FROM old) RETURNING id`;

/**
 * Deletes history older than `retentionDays` from PostgreSQL in small
 * batches (each its own short transaction, so no long locks): terminal jobs
 * finished before the cutoff with their events, executions and logs.
 * Jobs in the dead-letter queue are kept (their DLQ copy is the point).
 *
 * Yields to the audit writers: rows a writer holds are skipped (`FOR UPDATE
 * SKIP LOCKED`, which also re-checks a row's status as committed, so a job
 * moved out of a terminal state meanwhile is never deleted), and a batch that
 * waits on a lock longer than {@link PRUNE_LOCK_TIMEOUT_MS}, or is chosen as
 * a deadlock victim, is rolled back and ends the pass; the next pass
 * resumes where this one stopped.
 * @param batch jobs per statement; `maxBatches` statements at most per pass.
 * @returns rows deleted from `jobs` by this pass.
 * @throws any other PostgreSQL error (connection lost, …).
 */
export async function pruneHistory(db: DataSource, retentionDays: number, batch = 1000, maxBatches = 100): Promise<number> {
  let total = 0;
  for (let i = 0; i < maxBatches; i++) {
    let count: number;
    try {
      count = await db.transaction(async (m) => {
        await m.query(`SET LOCAL lock_timeout = '${PRUNE_LOCK_TIMEOUT_MS}ms'`);
        // TypeORM answers a DELETE with [rows, rowCount], not the rows alone.
        const out: [unknown[], number] | unknown[] = await m.query(PRUNE_SQL, [retentionDays, batch]);
        return Array.isArray(out[0]) && typeof out[1] === 'number' ? out[1] : out.length;
      });
    } catch (err) {
      const code = (err as { driverError?: { code?: string }; code?: string }).driverError?.code ?? (err as { code?: string }).code;
      if (code === LOCK_NOT_AVAILABLE || code === DEADLOCK_DETECTED) break;
      throw err;
    }
    total += count;
    if (count < batch) break;
  }
  return total;
}
