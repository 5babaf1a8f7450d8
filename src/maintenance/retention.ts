import type { DataSource } from 'typeorm';

/** SQLSTATEs (PostgreSQL manual, appendix A) that mean "the pruner lost a lock race": give way, try next pass. */
const LOCK_NOT_AVAILABLE = '55P03';
const DEADLOCK_DETECTED = '40P01';

/**
 * How long one prune statement waits for a lock before it gives way (ms).
 * Shorter than PostgreSQL's default deadlock_timeout (1 s), so when the
 * pruner and an mirror writer wait on each other (the writer on a `jobs` row
 * the prune is deleting, the prune on a `job_counts` row the writer's
 * earlier statement updated) the prune always gives up first: the writer's
 * batch is delayed by at most this, never aborted.
 */
export const PRUNE_LOCK_TIMEOUT_MS = 200;

/**
 * The smallest UUIDv7 of the cutoff's millisecond: every job finished before
 * the cutoff was created before it, so its id is below this bound (ids are
 * made at enqueue, their first 48 bits the creation time in ms). The prune
 * walks the primary key up to it; no index on finished_at is kept for it
 * (migration 1796000900000-LeanJobIndexes). Ids are made with the API
 * host's clock: a job enqueued through a host whose clock ran X ahead is
 * pruned up to X late, never early (finished_at, in Redis time, decides).
 */
const CUTOFF_ID = `(lpad(to_hex((extract(epoch FROM now() - make_interval(days => $1)) * 1000)::bigint), 12, '0') || '00000000000000000000')::uuid`;

/** The jobs one prune batch deletes (and locks): $1 = retention days, $2 = batch size. */
export const PRUNE_CANDIDATES_SQL = `SELECT id FROM jobs
   WHERE id < ${CUTOFF_ID}
     AND finished_at < now() - make_interval(days => $1) AND status IN ('completed', 'cancelled', 'failed')
     AND NOT EXISTS (SELECT 1 FROM dead_letter_jobs d WHERE d.job_id = jobs.id)
   LIMIT $2
   FOR UPDATE OF jobs SKIP LOCKED`;

/**
 * The history tables are partitioned by day of the job id (src/postgres/partitions.ts):
 * whole expired days are retired by retireExpiredDays; what is left below the
 * cutoff lives in the `_kept` (default) and `_legacy` partitions, and the
 * `< cutoff` bound on every statement keeps the others out of the plan (pruned at executor start).
 */
const PRUNE_SQL = `WITH old AS MATERIALIZED (${PRUNE_CANDIDATES_SQL}),
    ev AS (DELETE FROM job_events WHERE job_id < ${CUTOFF_ID} AND job_id IN (SELECT id FROM old)),
    ex AS (DELETE FROM job_executions WHERE job_id < ${CUTOFF_ID} AND job_id IN (SELECT id FROM old)),
    lg AS (DELETE FROM job_logs WHERE job_id < ${CUTOFF_ID} AND job_id IN (SELECT id FROM old)),
    dp AS (DELETE FROM job_dependencies WHERE job_id < ${CUTOFF_ID} AND job_id IN (SELECT id FROM old))
 DELETE FROM jobs WHERE id < ${CUTOFF_ID} AND id IN (SELECT id FROM old) RETURNING id`;

/**
 * Deletes history older than `retentionDays` from PostgreSQL in small
 * batches (each its own short transaction, so no long locks): terminal jobs
 * finished before the cutoff with their events, executions and logs.
 * Jobs in the dead-letter queue are kept (their DLQ copy is the point).
 *
 * Yields to the mirror writers: rows a writer holds are skipped (`FOR UPDATE
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
    const count = await yielding(db, PRUNE_SQL, [retentionDays, batch]);
    if (count === null) break;
    total += count;
    if (count < batch) break;
  }
  return total;
}

/** How long per-second finish counters are kept (ms): they serve the dashboard's last minute and GET /dashboard/metrics' last hour. */
export const FINISHES_KEEP_MS = 3_600_000;

/**
 * Moves `job_finishes` buckets older than {@link FINISHES_KEEP_MS} into
 * the per-minute `job_finishes_minute` (added to what the minute holds: a
 * DLQ retry of an old failure writes a −1 second bucket after its minute
 * was rolled up, and the next pass adds it), in one statement: each count
 * is in exactly one of the two tables at any time. A few rows per queue and
 * second. Yields to the writers as pruneHistory does.
 * @returns second buckets moved (0 when it gave way).
 * @throws any PostgreSQL error but a lock timeout or deadlock.
 */
export async function pruneFinishes(db: DataSource): Promise<number> {
  const sql = `WITH moved AS (DELETE FROM job_finishes WHERE bucket < now() - make_interval(secs => $1) RETURNING bucket, queue, completed, failed),
      up AS (INSERT INTO job_finishes_minute AS m (bucket, queue, completed, failed)
        SELECT date_trunc('minute', bucket), queue, sum(completed)::int, sum(failed)::int FROM moved GROUP BY 1, 2 ORDER BY 1, 2
        ON CONFLICT (bucket, queue) DO UPDATE SET completed = m.completed + EXCLUDED.completed, failed = m.failed + EXCLUDED.failed)
    SELECT count(*)::int AS n FROM moved`;
  const n = await yielding(db, sql, [FINISHES_KEEP_MS / 1000], (rows) => (rows[0] as { n: number }).n);
  return n ?? 0;
}

/**
 * Drops per-minute finish counters older than `retentionDays` (the history
 * they count is gone by then). One short statement.
 * @returns minute buckets deleted (0 when it gave way).
 */
export async function pruneFinishMinutes(db: DataSource, retentionDays: number): Promise<number> {
  return (await yielding(db, `DELETE FROM job_finishes_minute WHERE bucket < now() - make_interval(days => $1)`, [retentionDays])) ?? 0;
}

/**
 * Runs one statement in a transaction of its own with {@link PRUNE_LOCK_TIMEOUT_MS}.
 * @returns the rows it affected (or what `count` makes of the rows it returned), or null when it waited too long for a lock or was a deadlock victim (rolled back).
 */
async function yielding(db: DataSource, sql: string, params: unknown[], count?: (rows: unknown[]) => number): Promise<number | null> {
  try {
    return await db.transaction(async (m) => {
      await m.query(`SET LOCAL lock_timeout = '${PRUNE_LOCK_TIMEOUT_MS}ms'`);
      // TypeORM answers a DELETE with [rows, rowCount], not the rows alone.
      const out: [unknown[], number] | unknown[] = await m.query(sql, params);
      if (count) return count(out);
      return Array.isArray(out[0]) && typeof out[1] === 'number' ? out[1] : out.length;
    });
  } catch (err) {
    const code = (err as { driverError?: { code?: string }; code?: string }).driverError?.code ?? (err as { code?: string }).code;
    if (code === LOCK_NOT_AVAILABLE || code === DEADLOCK_DETECTED) return null;
    throw err;
  }
}

/**
 * Deletes operator-audit records (table `operator_audit`, src/oplog) older
 * than `retentionDays`, as the history is: by primary key below the cutoff's
 * UUIDv7 (ids are made when the request was answered), in batches of
 * `batch` rows, each its own short statement that yields to lock waits.
 * @returns rows deleted by this pass.
 * @throws any PostgreSQL error but a lock timeout or deadlock.
 */
export async function pruneOperatorAudit(db: DataSource, retentionDays: number, batch = 1000, maxBatches = 100): Promise<number> {
  let total = 0;
  for (let i = 0; i < maxBatches; i++) {
    const count = await yielding(
      db,
      `DELETE FROM operator_audit WHERE id IN (SELECT id FROM operator_audit WHERE id < ${CUTOFF_ID} ORDER BY id LIMIT $2 FOR UPDATE SKIP LOCKED)`,
      [retentionDays, batch],
    );
    if (count === null) break;
    total += count;
    if (count < batch) break;
  }
  return total;
}
