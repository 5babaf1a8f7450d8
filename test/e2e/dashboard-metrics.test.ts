import { startTestApi, TestApi } from '../support/http';
import { waitUntil } from '../support/timing';

type P = { at: string; completed: number; failed: number };

/**
 * `GET /dashboard/metrics` (API.md v1.1 "Dashboard (web)") on the full
 * stack: jobs run end to end show up in the series; seeded per-second and
 * per-minute counters are summed per step, zero-filled; bad bounds are 400
 * naming the field.
 */
describe('GET /dashboard/metrics (e2e)', () => {
  let api: TestApi;
  beforeAll(async () => {
    api = await startTestApi('e2e-metrics', { ROLE: 'api,worker,audit', WORKER_CONCURRENCY: '8' });
  });
  afterAll(async () => {
    await api?.close();
  });
  const metrics = async (query: Record<string, string | number>) => {
    const res = await api.http.get('/dashboard/metrics').query(query);
    expect(res.status).toBe(200);
    return res.body as { stepMs: number; series: P[] };
  };
  const sum = (s: P[]) => s.reduce((a, p) => ({ completed: a.completed + p.completed, failed: a.failed + p.failed }), { completed: 0, failed: 0 });

  it('counts jobs that ran, per queue, in the default last hour', async () => {
    const jobs = [
      ...Array.from({ length: 5 }, () => ({ type: 'diag.echo', queue: 'mq-a', payload: {} })),
      ...Array.from({ length: 2 }, () => ({ type: 'diag.fail', queue: 'mq-a', payload: {}, maxAttempts: 1 })),
      ...Array.from({ length: 3 }, () => ({ type: 'diag.echo', queue: 'mq-b', payload: {} })),
    ];
    expect((await api.http.post('/jobs/batch').send({ jobs })).status).toBe(201);
    await waitUntil('mirrored', async () => JSON.stringify(sum((await metrics({})).series)) === JSON.stringify({ completed: 8, failed: 2 }), 20000, 100);
    const a = await metrics({ queue: 'mq-a', stepMs: 60_000 });
    expect(sum(a.series)).toEqual({ completed: 5, failed: 2 });
    expect(a.stepMs).toBe(60_000);
    expect(a.series.length).toBeGreaterThanOrEqual(60);
    expect(a.series.length).toBeLessThanOrEqual(61);
    const d = await metrics({});
    expect(d.stepMs).toBe(30_000); // 1 h in ≤ 300 points
  });

  it('sums both counter tables per aligned step, zero-filled, oldest first', async () => {
    const q = 'mq-seed';
    // Seconds in the last hour, minutes (rolled up) before it.
    await api.db.dataSource.query(
      `INSERT INTO job_finishes (bucket, queue, completed, failed) VALUES
        ('2026-11-30T10:00:01Z', $1, 2, 0), ('2026-11-30T10:00:59Z', $1, 1, 1), ('2026-11-30T10:05:00Z', $1, 4, 0)`,
      [q],
    );
    await api.db.dataSource.query(
      `INSERT INTO job_finishes_minute (bucket, queue, completed, failed) VALUES ('2026-11-30T09:58:00Z', $1, 10, 3), ('2026-11-30T10:01:00Z', $1, 5, 0)`,
      [q],
    );
    const m = await metrics({ queue: q, from: '2026-11-30T09:57:30Z', to: '2026-11-30T10:06:00Z', stepMs: 120_000 });
    expect(m.series).toEqual([
      { at: '2026-11-30T09:56:00.000Z', completed: 0, failed: 0 },
      { at: '2026-11-30T09:58:00.000Z', completed: 10, failed: 3 },
      { at: '2026-11-30T10:00:00.000Z', completed: 8, failed: 1 },
      { at: '2026-11-30T10:02:00.000Z', completed: 0, failed: 0 },
      { at: '2026-11-30T10:04:00.000Z', completed: 4, failed: 0 },
    ]);
    // 1 s steps over 2 minutes: 120 points.
    expect((await metrics({ queue: q, from: '2026-11-30T10:00:00Z', to: '2026-11-30T10:02:00Z', stepMs: 1000 })).series).toHaveLength(120);
  });

  it('400 naming the field for bad bounds', async () => {
    const bad = async (query: Record<string, string | number>, path: string) => {
      const res = await api.http.get('/dashboard/metrics').query(query);
      expect({ status: res.status, path: res.body.error?.details?.[0]?.path }).toEqual({ status: 400, path });
    };
    await bad({ from: 'yesterday' }, 'from');
    await bad({ to: '2026-11-30' }, 'to');
    await bad({ from: '2026-11-30T10:00:00Z', to: '2026-11-30T09:00:00Z' }, 'from');
    await bad({ from: '2026-10-01T00:00:00Z', to: '2026-11-30T00:00:00Z' }, 'from');
    await bad({ stepMs: 999 }, 'stepMs');
    await bad({ stepMs: 86_400_001 }, 'stepMs');
    await bad({ stepMs: 'x' }, 'stepMs');
    await bad({ from: '2026-11-01T00:00:00Z', to: '2026-11-30T00:00:00Z', stepMs: 1000 }, 'stepMs');
    await bad({ queue: 'Bad Queue' }, 'queue');
  });
});
