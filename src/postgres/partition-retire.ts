import { DAY_MS, Db, HISTORY_TABLES, PARTITION_LOCK_TIMEOUT_MS, RangePartition, Sql, rangePartitions, uuidFloor, withConnection } from './partitions';

/**
 * How long a cancelled flow job stays a keeper whatever the retention (ms):
 * while its flow record lives (FLOW_RECORD_KEEP_MS, src/redis/stores/flow-record.ts,
 * 7 days), a DLQ retry of the dependency that cancelled it brings it back to
 * `blocked` (docs/workflows.md): its row must still be there to move.
 */
export const FLOW_DEPENDENT_KEEP_MS = 7 * 86_400_000;

/** What retiring one expired partition did. */
export interface RetiredDay {
  /** `d<yyyymmdd>` or `legacy`. */
  suffix: string;
  /** Jobs whose rows were moved to the `_kept` partitions (alive, in the DLQ, or finished within the window). */
  kept: number;
  /** Jobs whose history went with the partition. */
  dropped: number;
  /** Time the five parents were locked (ms): the detach transaction, what writers may have waited. */
  lockedMs: number;
}

/**
 * Retires every range partition whose whole range lies before the
 * retention cutoff (`nowMs − retentionDays` days): its upper bound is at or
 * below the cutoff's {@link uuidFloor}. Per expired day ({@link retireDay}).
 * Stops at the first day that gives way to a lock (PostgreSQL 55P03): the next pass goes on.
 * @returns what each retired day held.
 * @throws whatever PostgreSQL answers but a lock timeout.
 */
export async function retireExpiredDays(db: Db, retentionDays: number, nowMs = Date.now()): Promise<RetiredDay[]> {
  const cutoffMs = nowMs - retentionDays * DAY_MS;
  const cutoff = uuidFloor(Math.max(0, cutoffMs));
  return withConnection(db, async (c) => {
    await dropDetached(c);
    const out: RetiredDay[] = [];
    const parts = await rangePartitions(c, 'jobs');
    let kept = parts.some((p) => p.suffix === 'kept');
    // Lowest first: the one retired is always the one just above `_kept`.
    for (const p of parts) {
      if (p.suffix === 'kept' || p.suffix === 'ahead' || p.to === null || p.to > cutoff) continue;
      const r = await retireDay(c, p, cutoffMs, kept, nowMs);
      kept = true;
      if (!r) break;
      out.push(r);
    }
    return out;
  });
}

/**
 * Retires one expired range partition of the five history tables:
 *  1. Online, in one REPEATABLE READ snapshot (no lock the writers notice:
 *     ACCESS SHARE on the day's `jobs` partition only): the ids of the jobs
 *     to keep — not in a terminal state, finished at or after the cutoff,
 *     in the dead-letter queue, or a flow job cancelled within
 *     {@link FLOW_DEPENDENT_KEEP_MS} — into a temporary table, and the counts
 *     by queue and status of the others (the rows leaving `jobs`). Those
 *     others are terminal, finished before the cutoff and out of the DLQ: no
 *     transition changes such a row any more (a cancelled job's retry reads
 *     its history, which src/jobs refuses past the retention window; a
 *     flow's cancelled dependents stay keepers while the flow record can
 *     bring them back), so their counts are still right when step 2 runs.
 *     Known gap: a row the snapshot did not see — a job whose id a host
 *     clock more than RETENTION_DAYS behind made, written between step 1
 *     and step 2 — goes with the day, still counted in `job_counts`
 *     (test/integration/history/partition-races.test.ts, skipped).
 *  2. One short transaction (lock_timeout {@link PARTITION_LOCK_TIMEOUT_MS}):
 *     the five parents locked ACCESS EXCLUSIVE in the writer's order; per
 *     table the day and `<table>_kept` (made when absent: the first day
 *     retired after an upgrade) detached, the keepers' rows copied into
 *     `_kept` by primary key (named directly: the counters' statement
 *     triggers on `jobs` do not fire, the rows stay counted), `_kept`
 *     attached again over the day's range too (FROM MINVALUE TO the day's
 *     end: its check scans `_kept`, which holds keepers only); the counters
 *     lowered by step 1's counts. Its cost is the catalog work plus the
 *     keepers' rows and `_kept`'s check.
 *  3. The detached tables dropped (no lock on the parents; a crash before
 *     it leaves them detached, and the next pass drops them: {@link dropDetached}).
 * @returns null when step 2 gave way to a lock (nothing changed).
 * @throws whatever else PostgreSQL answers.
 */
export async function retireDay(c: Sql, p: RangePartition, cutoffMs: number, keptExists: boolean, nowMs = Date.now()): Promise<RetiredDay | null> {
  const part = (t: string) => `${t}_${p.suffix}`;
  const cutoff = new Date(cutoffMs).toISOString();
  await c.query(`CREATE TEMP TABLE IF NOT EXISTS sluice_keep (id uuid PRIMARY KEY)`);
  await c.query(`TRUNCATE sluice_keep`);
  await c.query('BEGIN ISOLATION LEVEL REPEATABLE READ');
  let gone: { queue: string; status: string; n: string }[];
  try {
    await c.query(
      `INSERT INTO sluice_keep (id) SELECT id FROM ${part('jobs')} j
        WHERE j.status NOT IN ('completed', 'cancelled', 'failed') OR j.finished_at IS NULL OR j.finished_at >= $1
           OR (j.flow_id IS NOT NULL AND j.status = 'cancelled' AND j.finished_at >= $2)
           OR EXISTS (SELECT 1 FROM dead_letter_jobs d WHERE d.job_id = j.id)`,
      [cutoff, new Date(nowMs - FLOW_DEPENDENT_KEEP_MS).toISOString()],
    );
    gone = await c.query(
      `SELECT queue, status, count(*)::bigint AS n FROM ${part('jobs')} j
        WHERE NOT EXISTS (SELECT 1 FROM sluice_keep k WHERE k.id = j.id) GROUP BY 1, 2 ORDER BY 1, 2`,
    );
    await c.query('COMMIT');
  } catch (err) {
    await c.query('ROLLBACK').catch(() => undefined);
    throw err;
  }
  const [{ keep }] = (await c.query(`SELECT count(*)::int AS keep FROM sluice_keep`)) as { keep: number }[];
  const t0 = Date.now();
  await c.query('BEGIN');
  try {
    await c.query(`SET LOCAL lock_timeout = '${PARTITION_LOCK_TIMEOUT_MS}ms'`);
    await c.query(`LOCK TABLE ${HISTORY_TABLES.map((t) => t.name).join(', ')} IN ACCESS EXCLUSIVE MODE`);
    for (const t of HISTORY_TABLES) {
      const kept = `${t.name}_kept`;
      await c.query(`ALTER TABLE ${t.name} DETACH PARTITION ${part(t.name)}`);
      if (keptExists) await c.query(`ALTER TABLE ${t.name} DETACH PARTITION ${kept}`);
      else await c.query(`CREATE TABLE ${kept} (LIKE ${t.name} INCLUDING DEFAULTS)`);
      if (keep) await c.query(`INSERT INTO ${kept} SELECT * FROM ${part(t.name)} WHERE ${t.key} IN (SELECT id FROM sluice_keep)`);
      await c.query(`ALTER TABLE ${t.name} ATTACH PARTITION ${kept} FOR VALUES FROM (MINVALUE) TO ('${p.to}')`);
    }
    if (gone.length) {
      await c.query(
        `INSERT INTO job_counts AS c (queue, status, n) SELECT q, s, -n FROM unnest($1::text[], $2::text[], $3::bigint[]) AS u(q, s, n)
         ON CONFLICT (queue, status) DO UPDATE SET n = c.n + EXCLUDED.n`,
        [gone.map((g) => g.queue), gone.map((g) => g.status), gone.map((g) => g.n)],
      );
    }
    await c.query('COMMIT');
  } catch (err) {
    await c.query('ROLLBACK').catch(() => undefined);
    if ((err as { code?: string }).code === '55P03' || (err as { driverError?: { code?: string } }).driverError?.code === '55P03') return null;
    throw err;
  }
  const lockedMs = Date.now() - t0;
  for (const t of HISTORY_TABLES) await c.query(`DROP TABLE IF EXISTS ${part(t.name)}`);
  return { suffix: p.suffix, kept: keep, dropped: gone.reduce((s, g) => s + Number(g.n), 0), lockedMs };
}

/**
 * Drops the history partitions left detached by a pass that stopped
 * between detaching and dropping: tables named `<table>_d<8 digits>` or
 * `<table>_legacy` that are no partition of anything.
 * @returns the tables dropped.
 */
export async function dropDetached(c: Sql): Promise<string[]> {
  const names = HISTORY_TABLES.map((t) => t.name);
  const rows = (await c.query(
    `SELECT c.relname AS name FROM pg_class c
      WHERE c.relkind = 'r' AND c.relnamespace = current_schema()::regnamespace AND NOT c.relispartition
        AND c.relname ~ ('^(' || array_to_string($1::text[], '|') || ')_(d[0-9]{8}|legacy)$')`,
    [names],
  )) as { name: string }[];
  for (const r of rows) await c.query(`DROP TABLE IF EXISTS ${r.name}`);
  return rows.map((r) => r.name);
}
