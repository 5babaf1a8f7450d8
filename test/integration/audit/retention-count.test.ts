import { pruneHistory } from '../../../src/audit/retention';
import { openTestDb, TestDb } from '../../support/postgres';

describe('pruneHistory', () => {
  let db: TestDb;
  beforeAll(async () => {
    db = await openTestDb('prune-count');
  });
  afterAll(async () => {
    await db?.close();
  });

  it('goes on batch after batch and returns the jobs deleted, keeping recent and live ones', async () => {
    // 2,500 old completed jobs, 10 recent completed ones, 5 old but still waiting.
    await db.dataSource.query(
      `INSERT INTO jobs (id, queue, type, status, max_attempts, backoff, timeout_ms, payload, created_at, run_at, finished_at, updated_at, last_event_ms, last_event_seq)
       SELECT gen_random_uuid(), 'q', 't', s.status, 1, 'exponential;2000;3600000;equal', 1000, '{}', f.at, f.at, CASE WHEN s.status = 'completed' THEN f.at END, f.at, 0, 0
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
