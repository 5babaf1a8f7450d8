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

const PRUNE_SQL = `WITH old AS MATERIALIZED (${PRUNE_CANDIDATES_SQL}), ev AS (DELETE FROM job_events WHERE job_id IN (SELECT id FROM old)),
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
    const count = await yielding(db, PRUNE_SQL, [retentionDays, batch]);
    if (count === null) break;
    total += count;
    if (count < batch) break;
  }
  return total;
}

/** How long per-second finish counters are kept (ms): they serve the dashboard's last minute. */
export const FINISHES_KEEP_MS = 3_600_000;

/**
 * Drops `job_finishes` buckets older than {@link FINISHES_KEEP_MS} (a few
 * rows per queue and second; one short statement). Yields to the writers
 * as pruneHistory does (a DLQ retry of an old failure updates an old bucket).
 * @returns buckets deleted (0 when it gave way).
 * @throws any PostgreSQL error but a lock timeout or deadlock.
 */
export async function pruneFinishes(db: DataSource): Promise<number> {
  return yielding(db, `DELETE FROM job_finishes WHERE bucket < now() - make_interval(secs => $1)`, [FINISHES_KEEP_MS / 1000]).then((n) => n ?? 0);
}

/**
 * Runs one statement in a transaction of its own with {@link PRUNE_LOCK_TIMEOUT_MS}.
 * @returns the rows it affected, or null when it waited too long for a lock or was a deadlock victim (rolled back).
 */
async function yielding(db: DataSource, sql: string, params: unknown[]): Promise<number | null> {
  try {
    return await db.transaction(async (m) => {
      await m.query(`SET LOCAL lock_timeout = '${PRUNE_LOCK_TIMEOUT_MS}ms'`);
      // TypeORM answers a DELETE with [rows, rowCount], not the rows alone.
      const out: [unknown[], number] | unknown[] = await m.query(sql, params);
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
