import type { DataSource } from 'typeorm';
import { DAY_MS, Sql, dayStart, ensureDays, rangePartitions } from '../../../src/postgres/partitions';
import { retireDay, retireExpiredDays } from '../../../src/postgres/partition-retire';
import { disablePayloadSearch, enablePayloadSearch, payloadIndexName } from '../../../src/queues/payload-search';
import { openTestDb, TestDb } from '../../support/postgres';
import { countsAndTruth, jobEntries, mirror, partitionsOf } from '../../support/history-rows';

/**
 * Races around the day partitions (src/postgres/partitions.ts,
 * partition-retire.ts, src/queues/payload-search.ts): a step of one
 * interleaved, through a wrapped connection, with another's statement.
 */
const today = dayStart(Date.now());

/** `c`, running `hook` before the `n`th statement that `match` accepts. */
function hooked(c: Sql, match: (sql: string) => boolean, n: number, hook: () => Promise<void>): Sql {
  let seen = 0;
  return {
    query: async (sql: string, params?: unknown[]) => {
      if (match(sql) && ++seen === n) await hook();
      return c.query(sql, params);
    },
  };
}

describe('retireDay between its snapshot and its detach', () => {
  let db: TestDb;
  beforeAll(async () => {
    db = await openTestDb('prace1');
  });
  afterAll(async () => {
    await db?.close();
  });

  // Not fixed: step 1 (the online snapshot) decides who is kept; a row of the day that changes
  // before step 2's lock (a cancelled flow job revived to `blocked` by the DLQ retry of its
  // dependency; a job whose id a host clock > RETENTION_DAYS behind made) is dropped, and the
  // counters, lowered by step 1's counts, no longer match the rows. A fix needs step 2 to
  // re-check the day under its lock (a scan of the day while the writers wait).
  it.skip('a job of the expired day that comes back to life after the snapshot is kept, and the counters match the rows', async () => {
    const ds: DataSource = db.dataSource;
    const old = today - 40 * DAY_MS;
    await ensureDays(ds, old, old);
    const done = jobEntries('rq', old + 1000, old + 2000, 'completed');
    await mirror(ds, done.entries);
    const day = (await rangePartitions(ds, 'jobs')).find((p) => p.suffix !== 'kept')!;
    const qr = ds.createQueryRunner();
    await qr.connect();
    try {
      // Step 2's transaction is the second BEGIN: the job is revived just before it.
      const c = hooked(qr, (s) => s.startsWith('BEGIN'), 2, async () => {
        await ds.query(`UPDATE jobs SET status = 'waiting', finished_at = NULL WHERE id = $1`, [done.id]);
        // And a job made by a host whose clock runs 40 days behind.
        const late = jobEntries('rq', old + 5000, 0, false);
        await mirror(ds, late.entries);
      });
      const r = await retireDay(c, day, Date.now() - 30 * DAY_MS, true);
      expect(r).not.toBeNull();
    } finally {
      await qr.release();
    }
    expect(await partitionsOf(ds, 'jobs', 'id', done.id)).toEqual(['jobs_kept']);
    const end = await countsAndTruth(ds);
    expect(end.counts).toEqual(end.truth);
  });
});

describe('payload index builds racing the day partitions', () => {
  let db: TestDb;
  beforeAll(async () => {
    db = await openTestDb('prace2');
  });
  afterAll(async () => {
    await db?.close();
  });

  it('a build that lists a day the retention then retires still ends ready', async () => {
    const ds = db.dataSource;
    const old = today - 40 * DAY_MS;
    await ensureDays(ds, old, old + DAY_MS);
    await mirror(ds, jobEntries('pq1', old + 1000).entries);
    // The day retires while the build is on another partition (after the list was read).
    const wrapped = hooked(ds, (s) => s.startsWith('CREATE INDEX CONCURRENTLY'), 1, async () => {
      await retireExpiredDays(ds, 30);
    }) as unknown as DataSource;
    const { build } = await enablePayloadSearch(wrapped, 'pq1');
    expect(await build).toBe('ready');
    const [ix] = await ds.query(`SELECT i.indisvalid AS valid FROM pg_class c JOIN pg_index i ON i.indexrelid = c.oid WHERE c.relname = $1`, [payloadIndexName('pq1')]);
    expect(ix).toEqual({ valid: true });
  });

  it('a retire between a partition\'s build and its attach still ends ready, with one index per partition', async () => {
    const ds = db.dataSource;
    const old = today - 45 * DAY_MS;
    await ensureDays(ds, old, old);
    await mirror(ds, jobEntries('pq3', old + 1000).entries);
    const wrapped = hooked(ds, (s) => s.startsWith('ALTER INDEX'), 1, async () => {
      await retireExpiredDays(ds, 30);
    }) as unknown as DataSource;
    const { build } = await enablePayloadSearch(wrapped, 'pq3');
    expect(await build).toBe('ready');
    const perPartition = await ds.query(
      `SELECT t.relname AS part, count(*)::int AS n FROM pg_index i JOIN pg_class x ON x.oid = i.indexrelid JOIN pg_class t ON t.oid = i.indrelid
        JOIN pg_inherits h ON h.inhrelid = t.oid AND h.inhparent = 'jobs'::regclass
       WHERE pg_get_indexdef(i.indexrelid) LIKE '%pq3%' GROUP BY 1 HAVING count(*) <> 1`,
    );
    expect(perPartition).toEqual([]);
  });

  it('turning the search off while its index builds leaves no index behind', async () => {
    const ds = db.dataSource;
    const name = payloadIndexName('pq2');
    const wrapped = hooked(ds, (s) => s.startsWith('CREATE INDEX CONCURRENTLY'), 2, async () => {
      await disablePayloadSearch(ds, 'pq2');
    }) as unknown as DataSource;
    const { build } = await enablePayloadSearch(wrapped, 'pq2');
    await build;
    const left = await ds.query(`SELECT relname FROM pg_class WHERE relkind IN ('i', 'I') AND relname LIKE $1`, [`${name}%`]);
    expect(left).toEqual([]);
    expect(await ds.query(`SELECT * FROM payload_search_queues WHERE queue = 'pq2'`)).toEqual([]);
  });
});

