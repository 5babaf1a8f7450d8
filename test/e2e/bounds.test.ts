import { waitForMirror } from '../../src/audit/queries/mirror-barrier';
import { RedisJobStore } from '../../src/redis/redis-job-store';
import { startTestApi, TestApi } from '../support/http';
import { sleep } from '../support/redis';
import { waitUntil } from '../support/timing';

/**
 * The Hardening reproductions of out-of-range numbers (README "Limits"), on
 * the full stack (api, worker, audit in one process): each absurd value is
 * refused with 400 naming the field, and what an older version let into
 * Redis (written here straight into the keys, as it left them) neither
 * breaks a read, nor stops the mirror, nor wedges a queue.
 */
describe('bounds: absurd numbers never get in, and old ones do no harm (e2e)', () => {
  let api: TestApi;
  let store: RedisJobStore;
  beforeAll(async () => {
    api = await startTestApi('e2e-bounds', { ROLE: 'api,worker,audit', WORKER_CONCURRENCY: '2' });
    store = api.app.get(RedisJobStore);
  });
  afterAll(async () => {
    await api?.close();
  });

  const paths = (res: { body: any }) => ((res.body.error?.details ?? []) as { path: string }[]).map((d) => d.path);
  const expect400 = (res: { status: number; body: any }, field: string) => {
    expect({ status: res.status, code: res.body.error?.code }).toEqual({ status: 400, code: 'validation_failed' });
    expect(paths(res)).toContain(field);
  };
  const huge = { type: 'fixed', delayMs: 1e19, maxDelayMs: 1e19, jitter: 'none' };

  it('repro 1: a backoff of 1e19 ms is refused on POST /jobs, POST /jobs/batch and PUT /queues/:name defaults', async () => {
    expect400(await api.http.post('/jobs').send({ type: 'diag.fail', payload: { times: 1 }, maxAttempts: 2, backoff: huge }), 'backoff.delayMs');
    expect400(await api.http.post('/jobs/batch').send({ jobs: [{ type: 'diag.echo' }, { type: 'diag.fail', backoff: huge }] }), 'jobs.1.backoff.maxDelayMs');
    expect400(await api.http.put('/queues/bounds-r1').send({ defaults: { backoff: huge } }), 'defaults.backoff.delayMs');
  });

  it('repro 2: a backoff of 9e15 ms (runAt past a JavaScript Date) is refused', async () => {
    const b = { type: 'fixed', delayMs: 9e15, maxDelayMs: 9e15, jitter: 'none' };
    expect400(await api.http.post('/jobs').send({ type: 'diag.fail', maxAttempts: 2, backoff: b }), 'backoff.delayMs');
  });

  it('repro 3: a rate-limit window of 1e20 ms is refused', async () => {
    expect400(await api.http.put('/queues/bounds-r3').send({ rateLimit: { max: 1, durationMs: 1e20 } }), 'rateLimit.durationMs');
  });

  it('a huge backoff stored by an old version: the retry lands within a year, the job stays readable, the mirror keeps up', async () => {
    const q = 'bounds-old-backoff';
    expect((await api.http.put(`/queues/${q}`).send({ maxConcurrency: 5 })).status).toBe(200);
    // What an older version stored for `PUT {defaults: {backoff: 1e19}}`.
    await store.redis.hset(store.keys(q).meta, 'dBo', 'fixed|10000000000000000000|10000000000000000000|none', 'dMa', '2');
    const created = await api.http.post('/jobs').send({ type: 'diag.fail', queue: q, payload: { times: 1 } });
    expect(created.status).toBe(201);
    const id = created.body.id;
    const job = await waitUntil('the retry is scheduled', async () => {
      const res = await api.http.get(`/jobs/${id}`);
      expect(res.status).toBe(200);
      return res.body.status === 'delayed' && res.body;
    }, 10_000, 50);
    const runAt = Date.parse(job.runAt);
    expect(runAt - Date.now()).toBeGreaterThan(364 * 86_400_000);
    expect(runAt - Date.now()).toBeLessThanOrEqual(365 * 86_400_000 + 60_000);
    expect(job.backoff).toEqual({ type: 'fixed', delayMs: 31_536_000_000, maxDelayMs: 31_536_000_000, jitter: 'none' });
    expect(await waitForMirror(store, [q], 5000)).toBe(true);
    // PostgreSQL has the retry too.
    const events = await waitUntil('events mirrored', async () => {
      const res = await api.http.get(`/jobs/${id}/events`);
      return res.status === 200 && res.body.items.some((e: any) => e.event === 'retry_scheduled') && res.body.items;
    }, 10_000, 100);
    expect(events.map((e: any) => e.event)).toEqual(['enqueued', 'claimed', 'retry_scheduled']);
  });

  it('a runAt past the Date range stored by an old version: GET /jobs/:id answers 200, the job can be cancelled', async () => {
    const created = await api.http.post('/jobs').send({ type: 'diag.echo', queue: 'bounds-old-runat', delayMs: 60_000 });
    expect(created.status).toBe(201);
    const id = created.body.id;
    const k = store.keys('bounds-old-runat');
    // What an older failJob wrote for `now + 9e15` / `now + 1e19` (a Lua number: %.14g).
    for (const ra of ['9001764000000000', '1e+19']) {
      await store.redis.hset(`${k.base}job:${id}`, 'ra', ra);
      await store.redis.zadd(k.delayed, ra, id);
      const res = await api.http.get(`/jobs/${id}`);
      expect({ status: res.status, jobStatus: res.body.status }).toEqual({ status: 200, jobStatus: 'delayed' });
      expect(res.body.runAt).toBe(new Date(8_640_000_000_000_000).toISOString());
    }
    const cancelled = await api.http.delete(`/jobs/${id}`);
    expect({ status: cancelled.status, jobStatus: cancelled.body.status }).toEqual({ status: 200, jobStatus: 'cancelled' });
    expect(await waitForMirror(store, ['bounds-old-runat'], 5000)).toBe(true);
  });

  it('a queue wedged by an old version\'s rate limit (window 1e20, counter left without expiry) runs again once a sane limit is PUT', async () => {
    const q = 'bounds-wedged';
    const k = store.keys(q);
    expect((await api.http.post(`/queues/${q}/pause`)).status).toBe(200);
    // The state the failed claim script left: the bad meta, and a window counter without expiry.
    await store.redis.hset(k.meta, 'rlMax', '1', 'rlDur', '100000000000000000000');
    await store.redis.set(k.rateLimit, '1');
    expect((await api.http.put(`/queues/${q}`).send({ rateLimit: { max: 2, durationMs: 300 } })).status).toBe(200);
    const ids: string[] = [];
    for (let i = 0; i < 6; i++) ids.push((await api.http.post('/jobs').send({ type: 'diag.echo', queue: q, payload: { i } })).body.id);
    expect((await api.http.post(`/queues/${q}/resume`)).status).toBe(200);
    await waitUntil('every job completes', async () => {
      const st = await Promise.all(ids.map(async (id) => (await api.http.get(`/jobs/${id}`)).body.status));
      return st.every((s) => s === 'completed');
    }, 10_000, 50);
    const ttl = await store.redis.pttl(k.rateLimit);
    expect(ttl === -2 || (ttl > 0 && ttl <= 300)).toBe(true);
  });

  it('an old version\'s absurd window alone does not wedge the queue: one job starts, the counter expires within a day', async () => {
    const q = 'bounds-old-window';
    const k = store.keys(q);
    expect((await api.http.post(`/queues/${q}/pause`)).status).toBe(200);
    await store.redis.hset(k.meta, 'rlMax', '1', 'rlDur', '100000000000000000000');
    const id = (await api.http.post('/jobs').send({ type: 'diag.echo', queue: q })).body.id;
    expect((await api.http.post(`/queues/${q}/resume`)).status).toBe(200);
    await waitUntil('the job completes', async () => (await api.http.get(`/jobs/${id}`)).body.status === 'completed', 10_000, 50);
    const ttl = await store.redis.pttl(k.rateLimit);
    expect(ttl).toBeGreaterThan(0);
    expect(ttl).toBeLessThanOrEqual(86_400_000);
    await sleep(10);
  });
});
