import { createHash } from 'node:crypto';
import type { DataSource } from 'typeorm';
import { isQualifiedQueue } from '../core/project-queue';

/** Where a queue's payload index stands: being built (CREATE INDEX CONCURRENTLY), usable, or its build failed. */
export type PayloadIndexState = 'building' | 'ready' | 'failed';

/** The partial GIN index of one queue: `jobs_payload_` + 16 hex of SHA-256(qualified queue name) (a queue name may not fit an identifier). */
export function payloadIndexName(queue: string): string {
  return 'jobs_payload_' + createHash('sha256').update(queue, 'utf8').digest('hex').slice(0, 16);
}

/** The index definition after `ON <table>` (see {@link payloadIndexSql}). */
function payloadIndexDef(queue: string): string {
  if (!isQualifiedQueue(queue)) throw new Error(`not a queue name: ${queue}`);
  return `USING gin (sluice_payload_jsonb(payload) jsonb_path_ops) WHERE queue = '${queue}'`;
}

/**
 * The DDL of a queue's payload index on the `jobs` parent: GIN
 * (jsonb_path_ops: containment only, smaller and faster than the default
 * opclass) over `sluice_payload_jsonb(payload)` (migration 1796001400000:
 * never an error on a payload that is not JSON), partial `WHERE queue =
 * '<queue>'` with the qualified name (src/core/project-queue.ts: the
 * `queue` column holds it, and a search of the project's queue names it
 * so, which the planner needs to match the predicate). Only rows of that
 * queue pay for it: the predicate is checked first on every insert and
 * non-HOT update of `jobs`, the expression (a jsonb parse of the payload)
 * and the GIN insertion only for rows of the queue.
 * `jobs` is partitioned (src/postgres/partitions.ts) and PostgreSQL builds
 * no index CONCURRENTLY on a partitioned table: this makes the parent's
 * index `ON ONLY` (invalid, nothing built), {@link build} then builds each
 * partition's CONCURRENTLY and attaches it; the parent's becomes valid with
 * the last one, and every partition made later gets it at once.
 * @param queue the qualified queue name.
 * @throws Error for a name that is not a qualified queue name (the name is inlined: the pattern allows no quote).
 */
export function payloadIndexSql(queue: string): string {
  return `CREATE INDEX IF NOT EXISTS ${payloadIndexName(queue)} ON ONLY jobs ${payloadIndexDef(queue)}`;
}

/**
 * `PUT /queues/:name {"payloadSearch": true}`: records the queue and starts
 * building its index in the background (CREATE INDEX CONCURRENTLY: the
 * writers go on; it can take minutes on a large table, so the request does
 * not wait). A build left invalid by a crash is dropped and started again.
 * @param queue the qualified queue name (the caller's project's).
 * @returns the state now (`ready` when it was built before) and, when a build started, its promise (tests wait for it).
 * @throws whatever PostgreSQL answers to the bookkeeping.
 */
export async function enablePayloadSearch(db: DataSource, queue: string): Promise<{ state: PayloadIndexState; build: Promise<PayloadIndexState> | null }> {
  const name = payloadIndexName(queue);
  const [row] = (await db.query(
    `INSERT INTO payload_search_queues AS p (queue, index_name, state) VALUES ($1, $2, 'building')
     ON CONFLICT (queue) DO UPDATE SET state = CASE WHEN p.state = 'ready' THEN 'ready' ELSE 'building' END, updated_at = now()
     RETURNING state`,
    [queue, name],
  )) as { state: PayloadIndexState }[];
  if (row.state === 'ready' && (await indexValid(db, name))) return { state: 'ready', build: null };
  return { state: 'building', build: build(db, queue, name) };
}

async function indexValid(db: DataSource, name: string): Promise<boolean | null> {
  const rows = (await db.query(`SELECT i.indisvalid AS valid FROM pg_class c JOIN pg_index i ON i.indexrelid = c.oid WHERE c.relname = $1`, [name])) as { valid: boolean }[];
  return rows.length ? rows[0].valid : null;
}

async function build(db: DataSource, queue: string, name: string): Promise<PayloadIndexState> {
  let state: PayloadIndexState = 'ready';
  try {
    await db.query(payloadIndexSql(queue));
    for (const part of await partitionsWithout(db, name)) {
      const own = `${name}_${part.slice(part.lastIndexOf('_') + 1)}`;
      // The retention re-attaches `_kept` (and may drop a day) while this goes on: a partition
      // (re)attached meanwhile got its index from the attach, built under the retention's lock.
      if (!(await partitionsWithout(db, name)).includes(part)) continue;
      try {
        // A build left invalid by a crash is dropped and made again.
        if ((await indexValid(db, own)) === false) await db.query(`DROP INDEX CONCURRENTLY IF EXISTS ${own}`);
        await db.query(`CREATE INDEX CONCURRENTLY IF NOT EXISTS ${own} ON ${part} ${payloadIndexDef(queue)}`);
        await db.query(`ALTER INDEX ${name} ATTACH PARTITION ${own}`);
      } catch (err) {
        // Turned off meanwhile (the parent's index dropped): the partition's own would stay, written for nothing.
        if ((await indexValid(db, name)) === null) {
          await db.query(`DROP INDEX CONCURRENTLY IF EXISTS ${own}`).catch(() => undefined);
          throw err;
        }
        // The day retired meanwhile (src/postgres/partition-retire.ts): nothing to build there.
        if (!(await isJobsPartition(db, part))) continue;
        // Re-attached meanwhile, with an index of its own from the attach: this one is a duplicate.
        if (!(await partitionsWithout(db, name)).includes(part)) {
          await db.query(`DROP INDEX CONCURRENTLY IF EXISTS ${own}`);
          continue;
        }
        throw err;
      }
    }
    if ((await indexValid(db, name)) !== true) state = 'failed';
  } catch {
    state = 'failed';
  }
  // Turned off before the parent's index was made: it would be made (and built) for a queue that no longer asks for it.
  const [still] = (await db.query(`SELECT 1 AS on FROM payload_search_queues WHERE queue = $1`, [queue]).catch(() => [{ on: 1 }])) as unknown[];
  if (!still) await db.query(`DROP INDEX IF EXISTS ${name}`).catch(() => undefined);
  await db.query(`UPDATE payload_search_queues SET state = $2, updated_at = now() WHERE queue = $1 AND state <> 'ready'`, [queue, state]).catch(() => undefined);
  return state;
}

/** Whether `table` is (still) a partition of `jobs`. */
async function isJobsPartition(db: DataSource, table: string): Promise<boolean> {
  const rows = (await db.query(`SELECT 1 FROM pg_inherits WHERE inhrelid = to_regclass($1) AND inhparent = 'jobs'::regclass`, [table])) as unknown[];
  return rows.length > 0;
}

/** The partitions of `jobs` that have no index attached to the parent's index `name`. */
async function partitionsWithout(db: DataSource, name: string): Promise<string[]> {
  const rows = (await db.query(
    `SELECT c.relname AS name FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
      WHERE i.inhparent = 'jobs'::regclass
        AND NOT EXISTS (SELECT 1 FROM pg_index x JOIN pg_inherits xi ON xi.inhrelid = x.indexrelid
                         WHERE x.indrelid = c.oid AND xi.inhparent = $1::regclass)`,
    [name],
  )) as { name: string }[];
  return rows.map((r) => r.name);
}

/**
 * `PUT /queues/:name {"payloadSearch": false}`: drops the queue's index (with every partition's) and forgets it.
 * @param queue the qualified queue name.
 * @throws whatever PostgreSQL answers.
 */
export async function disablePayloadSearch(db: DataSource, queue: string): Promise<void> {
  await db.query(`DELETE FROM payload_search_queues WHERE queue = $1`, [queue]);
  // A partitioned index cannot be dropped CONCURRENTLY: a plain DROP, which waits for the writers' current batch.
  await db.query(`DROP INDEX IF EXISTS ${payloadIndexName(queue)}`);
}

/** The payload-search state of each queue (qualified names, as the map's keys) that has it enabled. @throws whatever PostgreSQL answers. */
export async function payloadSearchStates(db: DataSource, queues: string[]): Promise<Map<string, PayloadIndexState>> {
  const rows = (await db.query(`SELECT queue, state FROM payload_search_queues WHERE queue = ANY($1::text[])`, [queues])) as { queue: string; state: PayloadIndexState }[];
  return new Map(rows.map((r) => [r.queue, r.state]));
}
