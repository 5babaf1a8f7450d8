import { setTimeout as sleep } from 'node:timers/promises';
import { pruneFinishes, pruneFinishMinutes, pruneHistory } from '../../../src/maintenance/retention';
import { openTestDb, TestDb, v7At, v7AtSql } from '../../support/postgres';

// One database for the file: each test's rows are its own (queues, ages), and each pass asserts on what it left.
let db: TestDb;
beforeAll(async () => {
  db = await openTestDb('prune');
});
afterAll(async () => {
  await db?.close();
});

describe('pruneHistory', () => {
  it('goes on batch after batch and returns the jobs deleted, keeping recent and live ones', async () => {
    // 2,500 old completed jobs, 10 recent completed ones, 5 old but still waiting.
    await db.dataSource.query(
      `INSERT INTO jobs (id, queue, type, status, max_attempts, backoff, timeout_ms, payload, created_at, run_at, finished_at, updated_at, last_event_ms, last_event_seq)
       SELECT ${v7AtSql('f.at')}, 'q', 't', s.status, 1, 'exponential;2000;3600000;equal', 1000, '{}', f.at, f.at, CASE WHEN s.status = 'completed' THEN f.at END, f.at, 0, 0
       FROM (SELECT 'completed' AS status, now() - interval '40 days' AS at, generate_series(1, 2500) AS n
             UNION ALL SELECT 'completed', now() - interval '1 day', generate_series(1, 10)
             UNION ALL SELECT 'waiting', now() - interval '40 days', generate_series(1, 5)) f
       CROSS JOIN LATERAL (SELECT f.status) s`,
    );
    const pruned = await pruneHistory(db.dataSource, 30, 1000);
    expect(pruned).toBe(2500);
    const left: { status: string; n: string }[] = await db.dataSource.query(`SELECT status, count(*) AS n FROM jobs GROUP BY status ORDER BY status`);
    expect(left.map((r) => [r.status, Number(r.n)])).toEqual([['completed', 10], ['waiting', 5]]);
    expect(await pruneHistory(db.dataSource, 30, 1000)).toBe(0);
  });
});

describe('pruneHistory beside an audit writer', () => {
  const insertOld = (ids: string[], status: string) =>
    db.dataSource.query(
      `INSERT INTO jobs (id, queue, type, status, max_attempts, backoff, timeout_ms, payload, created_at, run_at, finished_at, updated_at, last_event_ms, last_event_seq)
       SELECT i, 'py', 't', $2, 1, 'exponential;2000;3600000;equal', 1000, '{}', now() - interval '40 days', now() - interval '40 days',
              now() - interval '40 days', now() - interval '40 days', 0, 0
       FROM unnest($1::uuid[]) AS i`,
      [ids, status],
    );

  it('gives way instead of deadlocking when a writer holds a counter row and then touches a job being pruned', async () => {
    const old = Date.now() - 40 * 86_400_000;
    const [a, b, fresh] = [v7At(old), v7At(old + 1), v7At(Date.now())];
    await insertOld([a, b], 'cancelled');
    // The writer's batch: an insert (its counter trigger locks job_counts (py, cancelled)) ...
    const w = db.dataSource.createQueryRunner();
    await w.connect();
    try {
      await w.startTransaction();
      await w.query(
        `INSERT INTO jobs (id, queue, type, status, max_attempts, backoff, timeout_ms, payload, created_at, run_at, finished_at, updated_at, last_event_ms, last_event_seq)
         VALUES ($1, 'py', 't', 'cancelled', 1, 'exponential;2000;3600000;equal', 1000, '{}', now(), now(), now(), now(), 1, 0)`,
        [fresh],
      );
      // ... while the prune locks both old rows and waits for that counter row ...
      const t0 = Date.now();
      const prune = pruneHistory(db.dataSource, 30, 1000);
      await sleep(50);
      // ... and then the same batch updates an old row the prune holds (a DLQ retry of an old cancelled job).
      await w.query(`UPDATE jobs SET status = 'waiting', finished_at = NULL, last_event_ms = 2 WHERE id = $1`, [a]);
      await w.commitTransaction();
      // The prune gave up its batch within its lock timeout, before PostgreSQL's deadlock check (1 s) would abort one of them.
      expect(await prune).toBe(0);
      expect(Date.now() - t0).toBeLessThan(1000);
    } finally {
      if (w.isTransactionActive) await w.rollbackTransaction();
      await w.release();
    }
    // The next pass prunes the old row that is still terminal, never the one moved back to waiting.
    expect(await pruneHistory(db.dataSource, 30, 1000)).toBe(1);
    const left: { id: string; status: string }[] = await db.dataSource.query(`SELECT id::text, status FROM jobs WHERE queue = 'py' ORDER BY status`);
    expect(left).toEqual(expect.arrayContaining([{ id: a, status: 'waiting' }, { id: fresh, status: 'cancelled' }]));
    expect(left).toHaveLength(2);
    const counts: { status: string; n: number }[] = await db.dataSource.query(`SELECT status, n::int AS n FROM job_counts WHERE queue = 'py' AND n <> 0 ORDER BY status`);
    expect(counts).toEqual([{ status: 'cancelled', n: 1 }, { status: 'waiting', n: 1 }]);
  });

  it('skips a job a writer holds and leaves it for a later pass', async () => {
    const held = v7At(Date.now() - 40 * 86_400_000);
    await insertOld([held], 'completed');
    const w = db.dataSource.createQueryRunner();
    await w.connect();
    try {
      await w.startTransaction();
      await w.query(`SELECT 1 FROM jobs WHERE id = $1 FOR UPDATE`, [held]);
      expect(await pruneHistory(db.dataSource, 30, 1000)).toBe(0);
      await w.commitTransaction();
    } finally {
      if (w.isTransactionActive) await w.rollbackTransaction();
      await w.release();
    }
    expect(await pruneHistory(db.dataSource, 30, 1000)).toBe(1);
  }, 10_000);
});

describe('pruneFinishes', () => {
  it('rolls the per-second finish counters older than an hour up into minutes and keeps the rest', async () => {
    await db.dataSource.query(`DELETE FROM job_finishes`); // the buckets of the tests above (jobs finished 40 days ago)
    await db.dataSource.query(`DELETE FROM job_finishes_minute`);
    await db.dataSource.query(
      `INSERT INTO job_finishes (bucket, queue, completed, failed)
       SELECT date_trunc('minute', now()) - make_interval(mins => m) + make_interval(secs => s), 'q', 1, (s > 0)::int
       FROM unnest(ARRAY[0, 1, 59, 61, 120, 600]) AS m, unnest(ARRAY[0, 30]) AS s`,
    );
    const total = `SELECT sum(completed)::int AS c, sum(failed)::int AS f FROM (SELECT completed, failed FROM job_finishes UNION ALL SELECT completed, failed FROM job_finishes_minute) x`;
    const [before] = await db.dataSource.query(total);
    expect(await pruneFinishes(db.dataSource)).toBe(6);
    const [{ n }] = await db.dataSource.query(`SELECT count(*)::int AS n FROM job_finishes`);
    expect(n).toBe(6);
    // Every count is in exactly one table: the sums are unchanged; the seconds of one minute make one row.
    expect(await db.dataSource.query(total)).toEqual([before]);
    const minutes = await db.dataSource.query(`SELECT completed, failed FROM job_finishes_minute ORDER BY bucket`);
    expect(minutes).toEqual([
      { completed: 2, failed: 1 },
      { completed: 2, failed: 1 },
      { completed: 2, failed: 1 },
    ]);
    // A correction of an old bucket after its roll-up (a DLQ retry of an old failure) is added on the next pass.
    await db.dataSource.query(`INSERT INTO job_finishes (bucket, queue, completed, failed) VALUES (date_trunc('minute', now()) - interval '120 minutes', 'q', 0, -1)`);
    expect(await pruneFinishes(db.dataSource)).toBe(1);
    const [after] = await db.dataSource.query(total);
    expect(after).toEqual({ c: before.c, f: before.f - 1 });
  });

  it('pruneFinishMinutes drops minutes older than the retention', async () => {
    await db.dataSource.query(`DELETE FROM job_finishes_minute`);
    await db.dataSource.query(
      `INSERT INTO job_finishes_minute (bucket, queue, completed, failed) SELECT date_trunc('minute', now()) - make_interval(days => d), 'q', 1, 0 FROM unnest(ARRAY[1, 29, 31, 40]) AS d`,
    );
    expect(await pruneFinishMinutes(db.dataSource, 30)).toBe(2);
  });
});
