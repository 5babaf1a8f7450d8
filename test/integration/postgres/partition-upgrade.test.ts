import { DataSource } from 'typeorm';
import { createDataSource, ensureDatabase } from '../../../src/postgres/data-source';
import { JOB_EVENTS_SQL } from '../../../src/history/job-events';
import { GET_JOB_SQL } from '../../../src/history/get-job';
import { payloadIndexName } from '../../../src/queues/payload-search';
import { DAY_MS, dayStart, daySuffix, rangePartitions, uuidFloor } from '../../../src/postgres/partitions';
import { retireExpiredDays } from '../../../src/postgres/partition-retire';
import { dropDatabase, freshDatabaseUrl } from '../../support/postgres';
import { countsAndTruth, jobEntries, mirror, mirrorAsBefore, partitionsOf } from '../../support/history-rows';

/**
 * An installation on the schema before migration 1796001800000 (plain
 * history tables, rows written by the writer of that schema) upgrades with
 * its data: the rows become the `_legacy` partition, readable by the same
 * queries; new rows go to day partitions; the legacy partition retires
 * whole once its bound leaves the retention window, keeping its living jobs.
 */
let url: string;
let ds: DataSource;
afterAll(async () => {
  if (ds?.isInitialized) await ds.destroy();
  if (url) await dropDatabase(url);
});

it('upgrades a history written by the previous schema with its data, and retires it whole later', async () => {
  url = freshDatabaseUrl('pupgrade');
  await ensureDatabase(url);
  const before = createDataSource(url, 2, 'PartitionedHistory1796001800000');
  await before.initialize();
  await before.runMigrations({ transaction: 'each' });
  // Rows as the previous writer wrote them: its COPY form inserts into the plain tables alike.
  const old = Date.now() - 40 * DAY_MS;
  const done = Array.from({ length: 20 }, (_, i) => jobEntries('orders', old + i * 1000));
  const waiting = jobEntries('orders', old + 30_000, 0, false);
  const failed = jobEntries('orders', old + 31_000, old + 32_000, 'failed');
  const recent = jobEntries('orders', Date.now() - 60_000);
  await mirrorAsBefore(before, [...done, waiting, failed, recent].flatMap((j) => j.entries));
  await before.query(
    `CREATE INDEX ${payloadIndexName('orders')} ON jobs USING gin (sluice_payload_jsonb(payload) jsonb_path_ops) WHERE queue = 'orders'`,
  );
  await before.query(`INSERT INTO payload_search_queues (queue, index_name, state) VALUES ('orders', $1, 'ready')`, [payloadIndexName('orders')]);
  const countsBefore = await countsAndTruth(before);
  // GET /jobs/:id/events as the previous version served it: its job_events rows (no job_timeline view yet).
  const eventsBefore = await before.query(JOB_EVENTS_SQL.replace('FROM job_timeline', 'FROM job_events'), [recent.id]);
  expect(eventsBefore.map((e: { event: string }) => e.event)).toEqual(['enqueued', 'claimed', 'completed']);
  await before.destroy();

  ds = createDataSource(url, 3);
  await ds.initialize();
  const applied = await ds.runMigrations({ transaction: 'each' });
  expect(applied.map((m) => m.name)).toEqual(['PartitionedHistory1796001800000', 'FoldedExecutionEvents1796001900000', 'QueueSettings1796002000000', 'DependencyQueues1796002050000', 'DlqSummaries1796002100000', 'Organizations1796002200000']);

  // The queue's newest mirrored entry, seeded from the old rows (restore and the loss watch read it).
  const all = [...done, waiting, failed, recent].flatMap((j) => j.entries).map((e) => e.id.split('-').map(Number));
  const newest = all.sort((a, b) => a[0] - b[0] || a[1] - b[1]).pop()!;
  expect(await ds.query(`SELECT stream_ms::float8 AS ms, stream_seq::float8 AS seq FROM queue_stream_tops WHERE queue = 'orders'`)).toEqual([
    { ms: newest[0], seq: newest[1] },
  ]);
  // Every row is where it was, in the legacy partition, readable as before.
  const legacy = (await rangePartitions(ds, 'jobs')).find((p) => p.suffix === 'legacy');
  expect(legacy).toMatchObject({ from: null, to: uuidFloor(dayStart(Date.now()) + DAY_MS) });
  expect(await partitionsOf(ds, 'jobs', 'id', recent.id)).toEqual(['jobs_legacy']);
  expect(await partitionsOf(ds, 'job_events', 'job_id', recent.id)).toEqual(['job_events_legacy']);
  expect(await ds.query(JOB_EVENTS_SQL, [recent.id])).toEqual(eventsBefore);
  expect(await ds.query(GET_JOB_SQL, [recent.id])).toEqual([expect.objectContaining({ id: recent.id, status: 'completed' })]);
  const countsAfter = await countsAndTruth(ds);
  expect(countsAfter).toEqual(countsBefore);
  expect(countsAfter.counts).toEqual(countsAfter.truth);
  // The payload index is the parent's now, the legacy table's own attached to it.
  const [pix] = await ds.query(`SELECT i.indisvalid AS valid, c.relkind AS kind FROM pg_class c JOIN pg_index i ON i.indexrelid = c.oid WHERE c.relname = $1`, [
    payloadIndexName('orders'),
  ]);
  expect(pix).toEqual({ valid: true, kind: 'I' });

  // New rows go to a day partition (after the legacy bound), old entries replayed add nothing (the new key).
  const next = jobEntries('orders', dayStart(Date.now()) + DAY_MS + 1000);
  await mirror(ds, next.entries);
  expect(await partitionsOf(ds, 'jobs', 'id', next.id)).toEqual([`jobs_${daySuffix(dayStart(Date.now()) + DAY_MS)}`]);
  await mirror(ds, recent.entries, false);
  expect(await ds.query(JOB_EVENTS_SQL, [recent.id])).toEqual(eventsBefore);

  // 31 days after the upgrade day the legacy partition retires whole; its living and dead-lettered jobs stay.
  const retired = await retireExpiredDays(ds, 30, dayStart(Date.now()) + 32 * DAY_MS);
  expect(retired[0]).toMatchObject({ suffix: 'legacy', kept: 2, dropped: 21 });
  expect((await rangePartitions(ds, 'jobs')).map((p) => p.suffix)).not.toContain('legacy');
  expect(await partitionsOf(ds, 'jobs', 'id', waiting.id)).toEqual(['jobs_kept']);
  expect(await partitionsOf(ds, 'job_events', 'job_id', failed.id)).toEqual(['job_events_kept']);
  expect(await ds.query(`SELECT 1 FROM pg_class WHERE relname = 'jobs_legacy'`)).toEqual([]);
  const end = await countsAndTruth(ds);
  expect(end.counts).toEqual(end.truth);
});
