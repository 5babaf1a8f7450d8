import { HistoryQueries } from '../../src/history';
import { RECENT_JOBS_SQL } from '../../src/dashboard/recent-jobs';
import { startTestApi, TestApi } from '../support/http';
import { waitUntil } from '../support/timing';

describe('dashboard (e2e)', () => {
  let api: TestApi;
  beforeAll(async () => {
    api = await startTestApi('e2e-dashboard', { ROLE: 'all', QUEUES: 'dq', WORKER_CONCURRENCY: '4' });
  });
  afterAll(async () => {
    await api?.close();
  });
  const post = async (body: Record<string, unknown>) => {
    const r = await api.http.post('/jobs').send(body);
    expect(r.status).toBe(201);
    return r.body as { id: string };
  };

  it('stats: exact counts per queue and in total, workers, throughput, audit lag', async () => {
    const history = api.app.get(HistoryQueries);
    const completed = await Promise.all([1, 2, 3].map((n) => post({ type: 'diag.echo', queue: 'dq', payload: { n } })));
    const failed = await post({ type: 'diag.fail', queue: 'dq', maxAttempts: 1, payload: { message: 'boom' } });
    await post({ type: 'diag.echo', queue: 'dq', delayMs: 600_000 });
    // A queue the worker does not serve, paused, with two waiting jobs.
    expect((await api.http.post('/queues/dp/pause')).status).toBe(200);
    await post({ type: 'diag.echo', queue: 'dp' });
    await post({ type: 'diag.echo', queue: 'dp' });
    const cancelled = await post({ type: 'diag.echo', queue: 'dp', delayMs: 600_000 });
    expect((await api.http.delete(`/jobs/${cancelled.id}`)).status).toBe(200);

    for (const j of [...completed, failed]) {
      await waitUntil(`job ${j.id} finished`, async () => ['completed', 'failed'].includes((await api.http.get(`/jobs/${j.id}`)).body.status), 15_000);
    }
    await waitUntil('audit caught up', async () => (await history.mirrorLag()).pending === 0, 15_000);

    const res = await api.http.get('/dashboard/stats');
    expect(res.status).toBe(200);
    const s = res.body;
    expect(s.queues.dq).toEqual({ waiting: 0, delayed: 1, active: 0, completed: 3, failed: 1, cancelled: 0, paused: false, external: false });
    expect(s.queues.dp).toEqual({ waiting: 2, delayed: 0, active: 0, completed: 0, failed: 0, cancelled: 1, paused: true, external: false });
    expect(s.totals).toEqual({ waiting: 2, delayed: 1, active: 0, completed: 3, failed: 1, cancelled: 1 });
    expect(s.workers.active).toBe(1);
    expect(s.throughput).toEqual({ completedPerMin: 3, failedPerMin: 1 });
    expect(typeof s.auditLagMs).toBe('number');
    expect(s.auditLagMs).toBeGreaterThanOrEqual(0);
    // GET /queues agrees with the dashboard.
    const q = (await api.http.get('/queues/dq')).body;
    expect(q.counts).toEqual({ waiting: 0, delayed: 1, active: 0, completed: 3, failed: 1, cancelled: 0 });
  });

  it('recent: the last jobs by updatedAt, newest first, at most 20', async () => {
    await Promise.all(Array.from({ length: 22 }, (_, n) => post({ type: 'diag.echo', queue: 'dq', payload: { batch: n } })));
    const history = api.app.get(HistoryQueries);
    await waitUntil('22 more jobs completed and mirrored', async () => (await history.queueCounts(['dq'])).dq.completed >= 25 && (await history.mirrorLag()).pending === 0, 20_000);
    const last = await post({ type: 'diag.echo', queue: 'dq', payload: { last: true } });
    await waitUntil('last job mirrored as completed', async () => {
      const r = await api.http.get('/dashboard/recent');
      return r.body[0]?.id === last.id && r.body[0].status === 'completed';
    }, 15_000);
    const res = await api.http.get('/dashboard/recent');
    expect(res.status).toBe(200);
    expect(res.body).toHaveLength(20);
    const times = res.body.map((j: { updatedAt: string }) => Date.parse(j.updatedAt));
    expect([...times].sort((a, b) => b - a)).toEqual(times);
    expect(res.body[0]).toMatchObject({ id: last.id, queue: 'dq', type: 'diag.echo', payload: { last: true }, status: 'completed' });
  });

  it('the recent-jobs query reads each queue\'s newest rows from (queue, updated_at) (no sort of a queue\'s rows)', async () => {
    const qr = api.db.dataSource.createQueryRunner();
    try {
      await qr.query('SET enable_seqscan = off');
      const plan = (await qr.query(`EXPLAIN ${RECENT_JOBS_SQL}`, [20])).map((r: { 'QUERY PLAN': string }) => r['QUERY PLAN']).join('\n');
      expect(plan).toMatch(/Index Scan using jobs_d\d{8}_queue_updated_at_idx/);
      // The only sort is the final top-N over the queues' newest rows, never one of a queue's rows.
      expect(plan.match(/(?:^|-> +)Sort {2}\(/gm) ?? []).toHaveLength(1);
      expect(plan).toMatch(/Merge Append/);
    } finally {
      await qr.query('RESET enable_seqscan');
      await qr.release();
    }
  });

  it('GET /, /dashboard and /ui redirect to the console at /ui/; every /ui/ view path serves its index.html under a strict CSP', async () => {
    for (const path of ['/', '/dashboard', '/ui']) {
      const res = await api.http.get(path);
      expect(res.status).toBe(302);
      expect(res.headers.location).toBe('/ui/');
    }
    for (const path of ['/ui/', '/ui/jobs?queue=a&status=failed', '/ui/jobs/0190f5a0-0000-7000-8000-000000000001', '/ui/dlq']) {
      const res = await api.http.get(path);
      expect(res.status).toBe(200); // needs the console built (npm run build)
      expect(res.headers['content-type']).toMatch(/^text\/html/);
      expect(res.headers['cache-control']).toBe('no-cache');
      const csp = res.headers['content-security-policy'];
      expect(csp).toContain("script-src 'self'");
      expect(csp).not.toMatch(/unsafe-inline|unsafe-eval/);
      expect(res.text).toContain('<title>Sluice console</title>');
      // No inline script: the page's only scripts are files of the build.
      expect(res.text).not.toMatch(/<script(?![^>]*\bsrc=)[^>]*>/);
    }
    const index = (await api.http.get('/ui/')).text;
    const script = /src="(\/ui\/assets\/[^"]+\.js)"/.exec(index)?.[1];
    expect(script).toBeDefined();
    const js = await api.http.get(script!);
    expect(js.status).toBe(200);
    expect(js.headers['content-type']).toMatch(/^text\/javascript/);
    expect(js.headers['cache-control']).toBe('public, max-age=31536000, immutable');
    expect((await api.http.get('/ui/assets/missing-000.js')).status).toBe(404);
  });

});
