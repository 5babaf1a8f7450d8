import { jobEvents } from '../../../src/history/job-events';
import { JOB_EVENTS_SQL } from '../../../src/history/job-events';
import { DAY_MS, HISTORY_TABLES, dayStart, daySuffix, ensureDays, rangePartitions } from '../../../src/postgres/partitions';
import { retireExpiredDays } from '../../../src/postgres/partition-retire';
import { pruneHistory } from '../../../src/maintenance/retention';
import { openTestDb, TestDb } from '../../support/postgres';
import { countsAndTruth, jobEntries, mirror, partitionsOf } from '../../support/history-rows';

/**
 * The history partitioned by the job's creation day (src/postgres/partitions.ts,
 * migration 1796001800000): rows land in their job's day, reads prune to it,
 * days are made ahead (taking over what the default partition caught), and
 * retention retires whole days — keeping what must outlive them — while the
 * mirror writes.
 */
let db: TestDb;
beforeAll(async () => {
  db = await openTestDb('parts');
});
afterAll(async () => {
  await db?.close();
});

const today = dayStart(Date.now());

describe('partitioned history', () => {
  it('a job created in the last ms of a day keeps every row in that day, and its reads prune to it', async () => {
    await ensureDays(db.dataSource, today - DAY_MS, today);
    const created = today - 1;
    const { id, entries } = jobEntries('px', created, today + 5_000);
    await mirror(db.dataSource, entries.slice(0, 2));
    await mirror(db.dataSource, entries.slice(2));
    // The queue's newest mirrored entry (restore and the loss watch read it: job_events has no per-queue key any more).
    const newest = entries.map((e) => e.id.split('-').map(Number)).sort((a, b) => a[0] - b[0] || a[1] - b[1]).pop()!;
    const top = async () => (await db.dataSource.query(`SELECT stream_ms::float8 AS ms, stream_seq::float8 AS seq FROM queue_stream_tops WHERE queue = 'px'`))[0];
    expect(await top()).toEqual({ ms: newest[0], seq: newest[1] });
    // A replay (the idempotent form, keyed by job_id and the entry id) adds nothing, and never moves the top back.
    await mirror(db.dataSource, entries.slice(0, 1), false);
    expect(await top()).toEqual({ ms: newest[0], seq: newest[1] });
    await mirror(db.dataSource, entries, false);
    const day = daySuffix(today - DAY_MS);
    expect(await partitionsOf(db.dataSource, 'jobs', 'id', id)).toEqual([`jobs_${day}`]);
    for (const t of ['job_events', 'job_logs', 'job_executions']) expect(await partitionsOf(db.dataSource, t, 'job_id', id)).toEqual([`${t}_${day}`]);
    const { items } = await jobEvents(db.dataSource, id);
    expect(items.map((e) => e.event)).toEqual(['enqueued', 'claimed', 'completed']);
    expect((await db.dataSource.query(`SELECT count(*)::int AS n FROM job_logs WHERE job_id = $1`, [id]))[0].n).toBe(1);
    // GET /jobs/:id/events reads one partition: the others are pruned when the plan is made.
    const plan = (await db.dataSource.query(`EXPLAIN ${JOB_EVENTS_SQL.replace('$1', `'${id}'`)}`)).map((r: { 'QUERY PLAN': string }) => r['QUERY PLAN']).join('\n');
    expect(plan).toContain(`job_events_${day}`);
    expect(plan).not.toContain(`job_events_${daySuffix(today)}`);
    expect(plan).not.toContain('job_events_kept');
  });

  it('days made late take over the rows `_ahead` caught for them; the layout stays contiguous, no DEFAULT partition', async () => {
    const later = today + 20 * DAY_MS;
    const { id, entries } = jobEntries('px', later + 1000);
    await mirror(db.dataSource, entries);
    expect(await partitionsOf(db.dataSource, 'jobs', 'id', id)).toEqual(['jobs_ahead']);
    const before = await countsAndTruth(db.dataSource);
    const made = await ensureDays(db.dataSource, later, later);
    // Every day between the last one made and `later`, carved out of `_ahead` in one transaction.
    expect(made[made.length - 1]).toBe(daySuffix(later));
    expect(made).toHaveLength(20 - 3);
    const parts = await rangePartitions(db.dataSource, 'jobs');
    expect(parts[0]).toMatchObject({ suffix: 'kept', from: null });
    expect(parts[parts.length - 1]).toMatchObject({ suffix: 'ahead', to: null });
    for (let i = 1; i < parts.length; i++) expect(parts[i].from).toBe(parts[i - 1].to);
    expect(await db.dataSource.query(`SELECT 1 FROM pg_partitioned_table p JOIN pg_class c ON c.oid = p.partrelid WHERE p.partdefid <> 0`)).toEqual([]);
    expect(await partitionsOf(db.dataSource, 'jobs', 'id', id)).toEqual([`jobs_${daySuffix(later)}`]);
    expect(await partitionsOf(db.dataSource, 'job_events', 'job_id', id)).toEqual([`job_events_${daySuffix(later)}`]);
    expect(await countsAndTruth(db.dataSource)).toEqual(before);
    // Made once: a second pass finds it.
    expect(await ensureDays(db.dataSource, later, later)).toEqual([]);
  });

  it('retention retires whole expired days while the writer runs, keeps the living, the DLQ and the recently finished, and the counters stay exact', async () => {
    const old = today - 40 * DAY_MS;
    const older = today - 45 * DAY_MS;
    const recent = today - 5 * DAY_MS;
    await ensureDays(db.dataSource, older, older);
    await ensureDays(db.dataSource, old, old);
    await ensureDays(db.dataSource, recent, recent);
    const gone: string[] = [];
    const batch = [];
    for (let i = 0; i < 300; i++) {
      const j = jobEntries('pr', old + i * 1000);
      gone.push(j.id);
      batch.push(...j.entries);
    }
    const waiting = jobEntries('pr', old + 400_000, 0, false);
    const dlq = jobEntries('pr', old + 401_000, old + 402_000, 'failed');
    const lateFinish = jobEntries('pr', old + 403_000, Date.now() - DAY_MS);
    const olderJob = jobEntries('pr', older + 1000);
    const recentJobs = Array.from({ length: 50 }, (_, i) => jobEntries('pr', recent + i * 1000));
    for (const j of [waiting, dlq, lateFinish, olderJob, ...recentJobs]) batch.push(...j.entries);
    await mirror(db.dataSource, batch);
    expect((await db.dataSource.query(`SELECT count(*)::int AS n FROM dead_letter_jobs WHERE job_id = $1`, [dlq.id]))[0].n).toBe(1);

    // The writer goes on meanwhile: batches of 100 new jobs, each one transaction.
    let stop = false;
    let written = 0;
    const writer = (async () => {
      while (!stop) {
        const b = Array.from({ length: 100 }, () => jobEntries('pw', Date.now()));
        await mirror(db.dataSource, b.flatMap((j) => j.entries));
        written += 100;
      }
    })();
    let retired;
    try {
      await new Promise((r) => setTimeout(r, 100));
      retired = await retireExpiredDays(db.dataSource, 30);
      await new Promise((r) => setTimeout(r, 100));
    } finally {
      stop = true;
      await writer;
    }
    // Every day up to the cutoff, oldest first: the two that held jobs and the empty ones around them.
    const bySuffix = new Map(retired.map((r) => [r.suffix, r]));
    expect(retired[0].suffix).toBe(daySuffix(older));
    expect(retired[retired.length - 1].suffix).toBe(daySuffix(today - 31 * DAY_MS));
    expect(bySuffix.get(daySuffix(old))).toMatchObject({ kept: 3, dropped: 300 });
    expect(bySuffix.get(daySuffix(older))).toMatchObject({ kept: 0, dropped: 1 });
    expect(retired.reduce((n, r) => n + r.dropped, 0)).toBe(301);
    expect(written).toBeGreaterThan(0);
    expect((await db.dataSource.query(`SELECT count(*)::int AS n FROM jobs WHERE queue = 'pw'`))[0].n).toBe(written);

    // The expired days are gone from every table, the detached tables dropped; `_kept` now ends where the first day left begins.
    const layout = await rangePartitions(db.dataSource, 'jobs');
    expect(layout[0]).toMatchObject({ suffix: 'kept', to: layout[1].from });
    expect(layout[1].suffix).toBe(daySuffix(today - 30 * DAY_MS));
    const suffixes = layout.map((p) => p.suffix);
    expect(suffixes).not.toContain(daySuffix(old));
    expect(suffixes).toContain(daySuffix(recent));
    for (const t of HISTORY_TABLES) {
      expect(await db.dataSource.query(`SELECT 1 FROM pg_class WHERE relname = $1`, [`${t.name}_${daySuffix(old)}`])).toEqual([]);
    }
    expect((await db.dataSource.query(`SELECT count(*)::int AS n FROM jobs WHERE id = ANY($1::uuid[])`, [gone]))[0].n).toBe(0);
    expect((await db.dataSource.query(`SELECT count(*)::int AS n FROM job_timeline WHERE job_id = ANY($1::uuid[])`, [gone]))[0].n).toBe(0);
    expect((await db.dataSource.query(`SELECT count(*)::int AS n FROM jobs WHERE queue = 'pr' AND id >= $1`, [recentJobs[0].id]))[0].n).toBe(50);

    // The three keepers moved to the default partition with all their rows.
    for (const k of [waiting, dlq, lateFinish]) {
      expect(await partitionsOf(db.dataSource, 'jobs', 'id', k.id)).toEqual(['jobs_kept']);
      const { items } = await jobEvents(db.dataSource, k.id);
      expect(items.length).toBe(k.entries.filter((e) => e.fields.e !== 'log').length);
    }
    expect(await partitionsOf(db.dataSource, 'job_executions', 'job_id', dlq.id)).toEqual(['job_executions_kept']);
    expect(await partitionsOf(db.dataSource, 'job_logs', 'job_id', lateFinish.id)).toEqual(['job_logs_kept']);
    const { counts, truth } = await countsAndTruth(db.dataSource);
    expect(counts).toEqual(truth);

    // Nothing else is due: a second pass retires nothing; the kept rows are pruned row by row once they expire.
    expect(await retireExpiredDays(db.dataSource, 30)).toEqual([]);
    expect(await pruneHistory(db.dataSource, 30)).toBe(0);
    expect(await pruneHistory(db.dataSource, 0)).toBeGreaterThanOrEqual(1); // lateFinish, finished a day ago
    expect(await partitionsOf(db.dataSource, 'jobs', 'id', lateFinish.id)).toEqual([]);
    expect(await partitionsOf(db.dataSource, 'jobs', 'id', waiting.id)).toEqual(['jobs_kept']);
    const after = await countsAndTruth(db.dataSource);
    expect(after.counts).toEqual(after.truth);
  });

  it('a pass that stopped between detaching and dropping drops the detached tables next time', async () => {
    const old = today - 50 * DAY_MS;
    await ensureDays(db.dataSource, old, old);
    const s = daySuffix(old);
    for (const t of HISTORY_TABLES) await db.dataSource.query(`ALTER TABLE ${t.name} DETACH PARTITION ${t.name}_${s}`);
    expect(await db.dataSource.query(`SELECT 1 FROM pg_class WHERE relname = $1`, [`jobs_${s}`])).toHaveLength(1);
    await retireExpiredDays(db.dataSource, 30);
    for (const t of HISTORY_TABLES) expect(await db.dataSource.query(`SELECT 1 FROM pg_class WHERE relname = $1`, [`${t.name}_${s}`])).toEqual([]);
  });
});
