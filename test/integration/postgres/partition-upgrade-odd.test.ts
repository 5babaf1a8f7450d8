import { DataSource } from 'typeorm';
import { createDataSource, ensureDatabase } from '../../../src/postgres/data-source';
import { DAY_MS, PARTITION_DAYS_AHEAD, dayStart, daySuffix, ensureDays, rangePartitions } from '../../../src/postgres/partitions';
import { dropDatabase, freshDatabaseUrl, v7At } from '../../support/postgres';
import { countsAndTruth, jobEntries, mirror, mirrorAsBefore, partitionsOf } from '../../support/history-rows';

/**
 * Upgrades (migration 1796001800000) of histories with odd data: rows in
 * only some of the five tables, ids from a clock far ahead, ids at the top
 * of the 48-bit time range.
 */
const opened: { url: string; ds?: DataSource }[] = [];
afterAll(async () => {
  for (const o of opened) {
    if (o.ds?.isInitialized) await o.ds.destroy();
    await dropDatabase(o.url);
  }
});

/** A database on the schema just before the migration; `seed` writes its history; then the migration runs. */
async function upgraded(name: string, seed: (before: DataSource) => Promise<void>): Promise<DataSource> {
  const url = freshDatabaseUrl(name);
  const o: { url: string; ds?: DataSource } = { url };
  opened.push(o);
  await ensureDatabase(url);
  const before = createDataSource(url, 2, 'PartitionedHistory1796001800000');
  await before.initialize();
  await before.runMigrations({ transaction: 'each' });
  await seed(before);
  await before.destroy();
  o.ds = createDataSource(url, 3);
  await o.ds.initialize();
  await o.ds.runMigrations({ transaction: 'each' });
  return o.ds;
}

const count = async (ds: DataSource, t: string): Promise<number> => (await ds.query(`SELECT count(*)::int AS n FROM ${t}`))[0].n;

/** Copies one row of `table` with its key column set to `id` (every other column as the row had it). */
async function cloneRow(db: DataSource, table: string, key: string, id: string, set = ''): Promise<void> {
  await db.transaction(async (m) => {
    await m.query(`CREATE TEMP TABLE c ON COMMIT DROP AS SELECT * FROM ${table} LIMIT 1`);
    await m.query(`UPDATE c SET ${key} = $1${set}`, [id]);
    await m.query(`INSERT INTO ${table} SELECT * FROM c`);
  });
}

it('keeps the rows of an installation whose only history is in job_logs / job_executions / job_dependencies', async () => {
  const ds = await upgraded('pupodd1', async (before) => {
    const j = jobEntries('orders', Date.now() - 5 * DAY_MS);
    await mirrorAsBefore(before, j.entries);
    // jobs and job_events emptied (pruned, or never mirrored); the logs and executions of the job stay.
    await before.query(`DELETE FROM job_events`);
    await before.query(`DELETE FROM jobs`);
    expect(await count(before, 'job_logs')).toBe(1);
    expect(await count(before, 'job_executions')).toBe(1);
  });
  expect(await count(ds, 'job_logs')).toBe(1);
  expect(await count(ds, 'job_executions')).toBe(1);
});

it('upgrades when a table other than jobs / job_events holds the newest id', async () => {
  const ds = await upgraded('pupodd2', async (before) => {
    const j = jobEntries('orders', Date.now() - 5 * DAY_MS);
    await mirrorAsBefore(before, j.entries);
    // A log line of a job made by a host whose clock ran 10 days ahead (its jobs row pruned or never written).
    await cloneRow(before, 'job_logs', 'job_id', v7At(Date.now() + 10 * DAY_MS), ', stream_seq = stream_seq + 1000');
  });
  expect(await count(ds, 'job_logs')).toBe(2);
});

it('a job id from a clock a year ahead does not stop the day partitions: today\'s jobs land in their day', async () => {
  const ahead = v7At(Date.now() + 365 * DAY_MS);
  const ds = await upgraded('pupodd3', async (before) => {
    const j = jobEntries('orders', Date.now() - 5 * DAY_MS);
    await mirrorAsBefore(before, j.entries);
    const f = jobEntries('orders', Date.now() + 365 * DAY_MS);
    await mirrorAsBefore(before, f.entries.map((e) => ({ ...e, fields: e.fields })));
    await before.query(`UPDATE jobs SET id = $1 WHERE id = $2`, [ahead, f.id]);
    for (const t of ['job_events', 'job_logs', 'job_executions']) await before.query(`UPDATE ${t} SET job_id = $1 WHERE job_id = $2`, [ahead, f.id]);
  });
  expect(await count(ds, 'jobs')).toBe(2);
  const now = Date.now();
  await ensureDays(ds, now - DAY_MS, now + PARTITION_DAYS_AHEAD * DAY_MS);
  const suffixes = (await rangePartitions(ds, 'jobs')).map((p) => p.suffix);
  expect(suffixes).toContain(daySuffix(dayStart(now) + DAY_MS));
  const next = jobEntries('orders', dayStart(now) + DAY_MS + 1000);
  await mirror(ds, next.entries);
  expect(await partitionsOf(ds, 'jobs', 'id', next.id)).toEqual([`jobs_${daySuffix(dayStart(now) + DAY_MS)}`]);
  expect(await partitionsOf(ds, 'jobs', 'id', ahead)).toEqual(['jobs_ahead']);
  const c = await countsAndTruth(ds);
  expect(c.counts).toEqual(c.truth);
});

it('upgrades a history holding an id at the top of the 48-bit time range', async () => {
  const ds = await upgraded('pupodd4', async (before) => {
    const j = jobEntries('orders', Date.now() - 5 * DAY_MS);
    await mirrorAsBefore(before, j.entries);
    await cloneRow(before, 'jobs', 'id', 'ffffffff-ffff-7fff-bfff-ffffffffffff');
  });
  expect(await count(ds, 'jobs')).toBe(2);
});
