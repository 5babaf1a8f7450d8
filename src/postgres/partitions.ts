/**
 * Time-partitioned history (DESIGN.md "Partitioned history", issue 22).
 *
 * The five history tables are partitioned by RANGE on the job's id (`jobs.id`,
 * the others' `job_id`): a job id is a UUIDv7 whose first 48 bits are its
 * creation time in ms, so every row of one job lives in the partition of its
 * creation day (UTC), and `WHERE id = $1` / `WHERE job_id = $1` prunes to one
 * partition without a global index. Per table:
 *  - `<table>_d<yyyymmdd>`: one UTC day, `FROM (uuidFloor(day)) TO (uuidFloor(day + 1))`,
 *    made {@link PARTITION_DAYS_AHEAD} days ahead by the maintenance loop;
 *  - `<table>_kept`: `FROM (MINVALUE) TO (the first day)` — rows of jobs that
 *    outlived their day's partition (still waiting or running, in the
 *    dead-letter queue, or finished within the retention window when the day
 *    expired). Pruned row by row (src/maintenance/retention.ts); small;
 *  - `<table>_legacy`: instead of `_kept` after an upgrade, `FROM (MINVALUE)
 *    TO (…)`: the rows of an installation that ran before this version
 *    (migration 1796001800000), retired whole like a day (its keepers then start `_kept`);
 *  - `<table>_ahead`: `FROM (the end of the last day) TO (MAXVALUE)`: rows of
 *    days not made yet (a clock ahead); empty while the maintenance runs.
 * No DEFAULT partition: the ranges are contiguous and ordered, so a page in
 * id order reads the newest days first and stops.
 * Retention ({@link retireExpiredDays}) never deletes rows of a day partition:
 * it moves the day's keepers to `_kept`, detaches the day from all five
 * tables in one short transaction and drops the detached tables.
 */

/** Something that runs SQL on one connection: a TypeORM QueryRunner (or a DataSource for single statements). */
export interface Sql {
  query(sql: string, params?: unknown[]): Promise<any>;
}

/** A pool to take one connection from (a TypeORM DataSource), or that one connection already (a QueryRunner). */
export type Db = Sql | { createQueryRunner(): Sql & { connect(): Promise<unknown>; release(): Promise<void> } };

/** Runs `fn` on one connection: a transaction's statements must not be spread over a pool. */
export async function withConnection<T>(db: Db, fn: (c: Sql) => Promise<T>): Promise<T> {
  if (!('createQueryRunner' in db)) return fn(db);
  const qr = db.createQueryRunner();
  await qr.connect();
  try {
    return await fn(qr);
  } finally {
    await qr.release();
  }
}

/** A history table and the column it is partitioned on (the job's id). */
export interface HistoryTable {
  name: string;
  key: string;
}

/**
 * The partitioned tables, in the order the mirror writer's batch touches
 * them (src/mirror/batch-writer.ts: events, logs, jobs, dependencies,
 * executions), which is the order retention locks them in, so the two never
 * wait on each other in a cycle.
 */
export const HISTORY_TABLES: readonly HistoryTable[] = [
  { name: 'job_events', key: 'job_id' },
  { name: 'job_logs', key: 'job_id' },
  { name: 'jobs', key: 'id' },
  { name: 'job_dependencies', key: 'job_id' },
  { name: 'job_executions', key: 'job_id' },
];

export const DAY_MS = 86_400_000;

/** Days made ahead of today (UTC) by every maintenance pass: a host whose clock runs ahead still finds its day. */
export const PARTITION_DAYS_AHEAD = 3;

/**
 * How long a partition DDL waits for its lock before it gives way (ms): the
 * detach needs ACCESS EXCLUSIVE on the five parents, and while it waits every
 * writer queues behind it, so it waits briefly and tries again next pass.
 * Below PostgreSQL's deadlock_timeout (1 s): against a writer it always gives way first.
 */
export const PARTITION_LOCK_TIMEOUT_MS = 500;

/** The smallest UUID of millisecond `ms` (a UUIDv7 made at or after `ms` sorts at or above it). */
export function uuidFloor(ms: number): string {
  if (!Number.isSafeInteger(ms) || ms < 0 || ms >= 2 ** 48) throw new RangeError(`uuidFloor: ${ms} is not a 48-bit ms time`);
  const h = ms.toString(16).padStart(12, '0');
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-0000-0000-000000000000`;
}

/** The ms time of a UUID's first 48 bits (its creation time when it is a UUIDv7). */
export function uuidMs(id: string): number {
  return parseInt(id.slice(0, 8) + id.slice(9, 13), 16);
}

/** Start of the UTC day holding `ms`. */
export const dayStart = (ms: number): number => Math.floor(ms / DAY_MS) * DAY_MS;

/** `d20261203` for the UTC day starting at `dayMs`. */
export function daySuffix(dayMs: number): string {
  return 'd' + new Date(dayMs).toISOString().slice(0, 10).replace(/-/g, '');
}

/** One attached range partition of a history table: its name and its bounds (null = MINVALUE / MAXVALUE). */
export interface RangePartition {
  name: string;
  /** `d<yyyymmdd>`, `kept`, `legacy` or `ahead`: the part after `<table>_`. */
  suffix: string;
  from: string | null;
  to: string | null;
}

const BOUND_RE = /^FOR VALUES FROM \((MINVALUE|'[0-9a-f-]{36}')\) TO \((MAXVALUE|'[0-9a-f-]{36}')\)$/;

/**
 * The range partitions attached to `table`, by lower bound (MINVALUE first).
 * @throws whatever PostgreSQL answers.
 */
export async function rangePartitions(db: Sql, table: string): Promise<RangePartition[]> {
  const rows = (await db.query(
    `SELECT c.relname AS name, pg_get_expr(c.relpartbound, c.oid) AS bound
       FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid JOIN pg_class p ON p.oid = i.inhparent
      WHERE p.relname = $1 AND p.relnamespace = current_schema()::regnamespace`,
    [table],
  )) as { name: string; bound: string }[];
  const out: RangePartition[] = [];
  for (const r of rows) {
    const m = BOUND_RE.exec(r.bound);
    if (!m) continue; // DEFAULT
    const unq = (b: string) => (b.startsWith("'") ? b.slice(1, -1) : null);
    out.push({ name: r.name, suffix: r.name.slice(table.length + 1), from: unq(m[1]), to: unq(m[2]) });
  }
  return out.sort((a, b) => (a.from ?? '').localeCompare(b.from ?? ''));
}

/**
 * Makes the day partitions of every history table for each UTC day from
 * `fromMs`'s to `toMs`'s (inclusive) that no partition but `_kept` or
 * `_ahead` covers yet, in one transaction for the five tables (nothing when
 * every day exists). The layout stays contiguous and ordered —
 * `_kept` (or `_legacy`) from MINVALUE, then one partition per day, then
 * `_ahead` to MAXVALUE — with no DEFAULT partition, so a page by id reads
 * the newest days first and stops (an ordered Append; PostgreSQL cannot
 * order the scan of a table that has a DEFAULT partition):
 *  - days above the last one are carved out of `_ahead` (rows a host whose
 *    clock ran ahead wrote there move into their day), `_ahead` re-attached
 *    above them;
 *  - days below the first one are carved out of `_kept` (tests and
 *    benchmarks that make past days; `_legacy` is never split).
 * The parents are locked ACCESS EXCLUSIVE for the transaction (a detach needs
 * it): catalog work and empty index builds, tens of ms per day.
 * @param db a DataSource (one connection is taken) or a QueryRunner
 *   already inside a transaction (the migration): then `inTransaction`.
 * @returns the suffixes of the days made.
 * @throws whatever PostgreSQL answers (a lock wait longer than {@link PARTITION_LOCK_TIMEOUT_MS}: 55P03; try next pass).
 */
export async function ensureDays(db: Db, fromMs: number, toMs: number, inTransaction = false): Promise<string[]> {
  return withConnection(db, (c) => ensureDaysOn(c, fromMs, toMs, inTransaction));
}

async function ensureDaysOn(c: Sql, fromMs: number, toMs: number, inTransaction: boolean): Promise<string[]> {
  const parts = await rangePartitions(c, 'jobs');
  const bottom = parts.find((p) => p.from === null);
  const top = parts.find((p) => p.to === null);
  if (!bottom?.to || !top?.from || top.suffix !== 'ahead') throw new Error('the history tables are not laid out as migration 1796001800000 makes them');
  const statements: string[] = [];
  const made: string[] = [];
  const low = dayStart(fromMs);
  const keptTo = uuidMs(bottom.to);
  if (bottom.suffix === 'kept' && low < keptTo) {
    statements.push(...carve('kept', low, keptTo, made));
  }
  const aheadFrom = uuidMs(top.from);
  const end = dayStart(toMs) + DAY_MS;
  if (end > aheadFrom) statements.push(...carve('ahead', aheadFrom, end, made));
  if (!statements.length) return [];
  await inTx(c, inTransaction, [`LOCK TABLE ${HISTORY_TABLES.map((t) => t.name).join(', ')} IN ACCESS EXCLUSIVE MODE`, ...statements]);
  return made;
}

/**
 * Statements that carve the days [lo, hi) (ms, day-aligned) out of the
 * `holder` partition of each table: detach it, move its rows of each day
 * into a new table attached as that day, re-attach it beside them
 * (`_kept` below lo, `_ahead` above hi). Pushes each day's suffix to `made`.
 */
function carve(holder: 'kept' | 'ahead', lo: number, hi: number, made: string[]): string[] {
  const out: string[] = [];
  for (let day = lo; day < hi; day += DAY_MS) made.push(daySuffix(day));
  for (const t of HISTORY_TABLES) {
    const h = `${t.name}_${holder}`;
    out.push(`ALTER TABLE ${t.name} DETACH PARTITION ${h}`);
    for (let day = lo; day < hi; day += DAY_MS) {
      const part = `${t.name}_${daySuffix(day)}`;
      const [a, b] = [uuidFloor(day), uuidFloor(day + DAY_MS)];
      out.push(
        `CREATE TABLE ${part} (LIKE ${t.name} INCLUDING DEFAULTS)`,
        `WITH moved AS (DELETE FROM ${h} WHERE ${t.key} >= '${a}' AND ${t.key} < '${b}' RETURNING *) INSERT INTO ${part} SELECT * FROM moved`,
        `ALTER TABLE ${t.name} ATTACH PARTITION ${part} FOR VALUES FROM ('${a}') TO ('${b}')`,
      );
    }
    out.push(
      holder === 'kept'
        ? `ALTER TABLE ${t.name} ATTACH PARTITION ${h} FOR VALUES FROM (MINVALUE) TO ('${uuidFloor(lo)}')`
        : `ALTER TABLE ${t.name} ATTACH PARTITION ${h} FOR VALUES FROM ('${uuidFloor(hi)}') TO (MAXVALUE)`,
    );
  }
  return out;
}

async function inTx(db: Sql, inTransaction: boolean, statements: string[]): Promise<void> {
  if (inTransaction) {
    for (const s of statements) await db.query(s);
    return;
  }
  await db.query('BEGIN');
  try {
    await db.query(`SET LOCAL lock_timeout = '${PARTITION_LOCK_TIMEOUT_MS}ms'`);
    for (const s of statements) await db.query(s);
    await db.query('COMMIT');
  } catch (err) {
    await db.query('ROLLBACK').catch(() => undefined);
    throw err;
  }
}
