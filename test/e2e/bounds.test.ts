import { waitForMirror } from '../../src/history/mirror-barrier';
import { type RedisStores } from '../../src/redis/stores';
import { REDIS_STORES } from '../../src/redis/redis.module';
import { startTestApi, TestApi } from '../support/http';
import { sleep } from '../support/redis';
import { waitUntil } from '../support/timing';

/**
 * The Hardening reproductions of out-of-range numbers (docs/configuration.md, "Limits"), on
 * the full stack (api, worker, audit in one process): each absurd value is
 * refused with 400 naming the field, and what an older version let into
 * Redis (written here straight into the keys, as it left them) neither
 * breaks a read, nor stops the mirror, nor wedges a queue.
 */
describe('bounds: absurd numbers never get in, and old ones do no harm (e2e)', () => {
  let api: TestApi;
  let store: RedisStores;
  beforeAll(async () => {
    api = await startTestApi('e2e-bounds', { ROLE: 'api,worker,audit', WORKER_CONCURRENCY: '2' });
    store = api.app.get<RedisStores>(REDIS_STORES);
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

  /**
   * Boundary pairs: [what, request at the bound (accepted), the same one past it (400), the field the 400 names].
   * Accepted means any answer but 400 (a heartbeat with an unknown token is 404/409 after validation).
   */
  type Req = [method: 'post' | 'put' | 'get', path: string, body?: unknown];
  const job = (extra: Record<string, unknown>) => ({ type: 'diag.echo', queue: 'bounds-edge', ...extra });
  const boundaries: [string, Req, Req, string][] = [
    ['delayMs', ['post', '/jobs', job({ delayMs: 31_536_000_000 })], ['post', '/jobs', job({ delayMs: 31_536_000_001 })], 'delayMs'],
    ['backoff.delayMs', ['post', '/jobs', job({ backoff: { delayMs: 31_536_000_000, maxDelayMs: 31_536_000_000 } })], ['post', '/jobs', job({ backoff: { delayMs: 31_536_000_001 } })], 'backoff.delayMs'],
    ['backoff.maxDelayMs', ['post', '/jobs', job({ backoff: { delayMs: 0, maxDelayMs: 31_536_000_000 } })], ['post', '/jobs', job({ backoff: { maxDelayMs: 31_536_000_001 } })], 'backoff.maxDelayMs'],
    ['priority max', ['post', '/jobs', job({ priority: 100 })], ['post', '/jobs', job({ priority: 101 })], 'priority'],
    ['priority min', ['post', '/jobs', job({ priority: -100 })], ['post', '/jobs', job({ priority: -101 })], 'priority'],
    ['maxAttempts', ['post', '/jobs', job({ maxAttempts: 100 })], ['post', '/jobs', job({ maxAttempts: 101 })], 'maxAttempts'],
    ['timeoutMs', ['post', '/jobs', job({ timeoutMs: 86_400_000 })], ['post', '/jobs', job({ timeoutMs: 86_400_001 })], 'timeoutMs'],
    ['timeoutMs min', ['post', '/jobs', job({ timeoutMs: 1 })], ['post', '/jobs', job({ timeoutMs: 0 })], 'timeoutMs'],
    ['runAt', ['post', '/jobs', job({ runAt: '9999-12-31T23:59:59.999Z' })], ['post', '/jobs', job({ runAt: '+010000-01-01T00:00:00.000Z' })], 'runAt'],
    ['runAt before 1970', ['post', '/jobs', job({ runAt: '1970-01-01T00:00:00.000Z' })], ['post', '/jobs', job({ runAt: '1969-12-31T23:59:59.999Z' })], 'runAt'],
    ['batch item', ['post', '/jobs/batch', { jobs: [job({ delayMs: 31_536_000_000 })] }], ['post', '/jobs/batch', { jobs: [job({}), job({ delayMs: 31_536_000_001 })] }], 'jobs.1.delayMs'],
    ['batch size', ['post', '/jobs/batch', { jobs: Array.from({ length: 1000 }, () => job({})) }], ['post', '/jobs/batch', { jobs: Array.from({ length: 1001 }, () => job({})) }], 'jobs'],
    ['maxConcurrency', ['put', '/queues/bounds-edge', { maxConcurrency: 100_000 }], ['put', '/queues/bounds-edge', { maxConcurrency: 100_001 }], 'maxConcurrency'],
    ['rateLimit.max', ['put', '/queues/bounds-edge', { rateLimit: { max: 1_000_000, durationMs: 1000 } }], ['put', '/queues/bounds-edge', { rateLimit: { max: 1_000_001, durationMs: 1000 } }], 'rateLimit.max'],
    ['rateLimit.durationMs', ['put', '/queues/bounds-edge', { rateLimit: { max: 1, durationMs: 86_400_000 } }], ['put', '/queues/bounds-edge', { rateLimit: { max: 1, durationMs: 86_400_001 } }], 'rateLimit.durationMs'],
    ['defaults.timeoutMs', ['put', '/queues/bounds-edge', { defaults: { timeoutMs: 86_400_000 } }], ['put', '/queues/bounds-edge', { defaults: { timeoutMs: 86_400_001 } }], 'defaults.timeoutMs'],
    ['defaults.maxAttempts', ['put', '/queues/bounds-edge', { defaults: { maxAttempts: 100 } }], ['put', '/queues/bounds-edge', { defaults: { maxAttempts: 101 } }], 'defaults.maxAttempts'],
    ['defaults.backoff.maxDelayMs', ['put', '/queues/bounds-edge', { defaults: { backoff: { maxDelayMs: 31_536_000_000 } } }], ['put', '/queues/bounds-edge', { defaults: { backoff: { maxDelayMs: 31_536_000_001 } } }], 'defaults.backoff.maxDelayMs'],
    ['claim max', ['post', '/queues/bounds-ext/claim', { workerId: 'w', max: 100 }], ['post', '/queues/bounds-ext/claim', { workerId: 'w', max: 101 }], 'max'],
    ['claim waitMs', ['post', '/queues/bounds-ext/claim', { workerId: 'w', waitMs: 30_000 }], ['post', '/queues/bounds-ext/claim', { workerId: 'w', waitMs: 30_001 }], 'waitMs'],
    ['claim leaseMs', ['post', '/queues/bounds-ext/claim', { workerId: 'w', leaseMs: 86_400_000 }], ['post', '/queues/bounds-ext/claim', { workerId: 'w', leaseMs: 86_400_001 }], 'leaseMs'],
    ['heartbeat leaseMs', ['post', '/jobs/01900000-0000-7000-8000-000000000001/heartbeat', { lockToken: 't', leaseMs: 86_400_000 }], ['post', '/jobs/01900000-0000-7000-8000-000000000001/heartbeat', { lockToken: 't', leaseMs: 86_400_001 }], 'leaseMs'],
    ['heartbeat progress', ['post', '/jobs/01900000-0000-7000-8000-000000000001/heartbeat', { lockToken: 't', progress: 100 }], ['post', '/jobs/01900000-0000-7000-8000-000000000001/heartbeat', { lockToken: 't', progress: 100.5 }], 'progress'],
    ['heartbeat logs', ['post', '/jobs/01900000-0000-7000-8000-000000000001/heartbeat', { lockToken: 't', logs: Array(100).fill('x') }], ['post', '/jobs/01900000-0000-7000-8000-000000000001/heartbeat', { lockToken: 't', logs: Array(101).fill('x') }], 'logs'],
    ['GET /jobs limit', ['get', '/jobs?limit=500'], ['get', '/jobs?limit=501'], 'limit'],
    ['GET /jobs/dlq/all limit', ['get', '/jobs/dlq/all?limit=500'], ['get', '/jobs/dlq/all?limit=1e3'], 'limit'],
    ['preview count', ['get', '/schedules/preview?cron=*%20*%20*%20*%20*&count=100'], ['get', '/schedules/preview?cron=*%20*%20*%20*%20*&count=101'], 'count'],
    // Flow control per key (API.md v1.1/v1.2, issue 20).
    ['concurrencyKey', ['post', '/jobs', job({ concurrencyKey: 'k'.repeat(128) })], ['post', '/jobs', job({ concurrencyKey: 'k'.repeat(129) })], 'concurrencyKey'],
    ['debounce.windowMs min', ['post', '/jobs', job({ debounce: { key: 'b1', windowMs: 100 } })], ['post', '/jobs', job({ debounce: { key: 'b1', windowMs: 99 } })], 'debounce.windowMs'],
    ['debounce.windowMs max', ['post', '/jobs', job({ debounce: { key: 'b2', windowMs: 86_400_000 } })], ['post', '/jobs', job({ debounce: { key: 'b2', windowMs: 86_400_001 } })], 'debounce.windowMs'],
    ['debounce.maxWaitMs', ['post', '/jobs', job({ debounce: { key: 'b3', windowMs: 100, maxWaitMs: 604_800_000 } })], ['post', '/jobs', job({ debounce: { key: 'b3', windowMs: 100, maxWaitMs: 604_800_001 } })], 'debounce.maxWaitMs'],
    ['debounce.maxWaitMs ≥ windowMs', ['post', '/jobs', job({ debounce: { key: 'b4', windowMs: 5000, maxWaitMs: 5000 } })], ['post', '/jobs', job({ debounce: { key: 'b4', windowMs: 5000, maxWaitMs: 4999 } })], 'debounce.maxWaitMs'],
    ['debounce.key', ['post', '/jobs', job({ debounce: { key: 'd'.repeat(128), windowMs: 100 } })], ['post', '/jobs', job({ debounce: { key: 'd'.repeat(129), windowMs: 100 } })], 'debounce.key'],
    ['keyConcurrency', ['put', '/queues/bounds-edge', { keyConcurrency: 100_000 }], ['put', '/queues/bounds-edge', { keyConcurrency: 100_001 }], 'keyConcurrency'],
    ['keyRateLimit.max', ['put', '/queues/bounds-edge', { keyRateLimit: { max: 10_000, durationMs: 1000 } }], ['put', '/queues/bounds-edge', { keyRateLimit: { max: 10_001, durationMs: 1000 } }], 'keyRateLimit.max'],
    ['keyRateLimit.durationMs', ['put', '/queues/bounds-edge', { keyRateLimit: { max: 1, durationMs: 86_400_000 } }], ['put', '/queues/bounds-edge', { keyRateLimit: { max: 1, durationMs: 86_400_001 } }], 'keyRateLimit.durationMs'],
    ['agingMs min', ['put', '/queues/bounds-edge', { agingMs: 1000 }], ['put', '/queues/bounds-edge', { agingMs: 999 }], 'agingMs'],
    ['agingMs max', ['put', '/queues/bounds-edge', { agingMs: 86_400_000 }], ['put', '/queues/bounds-edge', { agingMs: 86_400_001 }], 'agingMs'],
    ['key override concurrency', ['put', '/queues/bounds-edge/keys/k', { concurrency: 100_000 }], ['put', '/queues/bounds-edge/keys/k', { concurrency: 100_001 }], 'concurrency'],
    ['key override rateLimit.max', ['put', '/queues/bounds-edge/keys/k', { rateLimit: { max: 10_000, durationMs: 1 } }], ['put', '/queues/bounds-edge/keys/k', { rateLimit: { max: 10_001, durationMs: 1 } }], 'rateLimit.max'],
    ['key in the path', ['put', `/queues/bounds-edge/keys/${'k'.repeat(128)}`, {}], ['put', `/queues/bounds-edge/keys/${'k'.repeat(129)}`, {}], 'key'],
    ['GET /queues/:name/keys limit', ['get', '/queues/bounds-edge/keys?limit=1000'], ['get', '/queues/bounds-edge/keys?limit=1001'], 'limit'],
    ['schedule concurrencyKey', ['post', '/schedules', { name: 'bounds-ck', cron: '0 0 1 1 *', type: 'diag.echo', concurrencyKey: 'k'.repeat(128) }], ['post', '/schedules', { name: 'bounds-ck2', cron: '0 0 1 1 *', type: 'diag.echo', concurrencyKey: 'k'.repeat(129) }], 'concurrencyKey'],
    ['schedule backoff', ['post', '/schedules', { name: 'bounds-s', cron: '0 0 1 1 *', type: 'diag.echo', backoff: { delayMs: 31_536_000_000, maxDelayMs: 31_536_000_000 } }], ['post', '/schedules', { name: 'bounds-s2', cron: '0 0 1 1 *', type: 'diag.echo', backoff: { delayMs: 31_536_000_001 } }], 'backoff.delayMs'],
  ];
  const send = ([method, path, body]: Req) => (body === undefined ? api.http[method](path) : api.http[method](path).send(body as object));

  it.each(boundaries)('%s: the bound is accepted, one past it is refused naming the field', async (_what, ok, bad, field) => {
    await api.http.put('/queues/bounds-ext').send({ external: true });
    // A ready job, so a claim at waitMs 30000 answers at once.
    expect((await api.http.post('/jobs').send({ type: 'ext.any', queue: 'bounds-ext' })).status).toBe(201);
    const accepted = await send(ok);
    // The 400's details on failure, to see which rule refused it.
    expect(accepted.status === 400 ? accepted.body.error : 'not 400').toBe('not 400');
    expect(accepted.status).toBeLessThan(500);
    expect400(await send(bad), field);
  });

  it('a huge backoff stored by an old version: the retry lands within a year, the job stays readable, the mirror keeps up', async () => {
    const q = 'bounds-old-backoff';
    expect((await api.http.put(`/queues/${q}`).send({ maxConcurrency: 5 })).status).toBe(200);
    // What an older version stored for `PUT {defaults: {backoff: 1e19}}`.
    await store.ctx.redis.hset(store.ctx.keys(q).meta, 'dBo', 'fixed|10000000000000000000|10000000000000000000|none', 'dMa', '2');
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
    expect(await waitForMirror(store.mirror, [q], 5000)).toBe(true);
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
    const k = store.ctx.keys('bounds-old-runat');
    // What an older failJob wrote for `now + 9e15` / `now + 1e19` (a Lua number: %.14g).
    for (const ra of ['9001764000000000', '1e+19']) {
      await store.ctx.redis.hset(`${k.base}job:${id}`, 'ra', ra);
      await store.ctx.redis.zadd(k.delayed, ra, id);
      const res = await api.http.get(`/jobs/${id}`);
      expect({ status: res.status, jobStatus: res.body.status }).toEqual({ status: 200, jobStatus: 'delayed' });
      // The last instant RFC 3339 can write (not `+275760-…`, which date-time parsers refuse).
      expect(res.body.runAt).toBe('9999-12-31T23:59:59.999Z');
    }
    const cancelled = await api.http.delete(`/jobs/${id}`);
    expect({ status: cancelled.status, jobStatus: cancelled.body.status }).toEqual({ status: 200, jobStatus: 'cancelled' });
    expect(await waitForMirror(store.mirror, ['bounds-old-runat'], 5000)).toBe(true);
  });

  it('a queue wedged by an old version\'s rate limit (window 1e20, counter left without expiry) runs again once a sane limit is PUT', async () => {
    const q = 'bounds-wedged';
    const k = store.ctx.keys(q);
    expect((await api.http.post(`/queues/${q}/pause`)).status).toBe(200);
    // The state the failed claim script left: the bad meta, and a window counter without expiry.
    await store.ctx.redis.hset(k.meta, 'rlMax', '1', 'rlDur', '100000000000000000000');
    await store.ctx.redis.set(k.rateLimit, '1');
    expect((await api.http.put(`/queues/${q}`).send({ rateLimit: { max: 2, durationMs: 300 } })).status).toBe(200);
    const ids: string[] = [];
    for (let i = 0; i < 6; i++) ids.push((await api.http.post('/jobs').send({ type: 'diag.echo', queue: q, payload: { i } })).body.id);
    expect((await api.http.post(`/queues/${q}/resume`)).status).toBe(200);
    await waitUntil('every job completes', async () => {
      const st = await Promise.all(ids.map(async (id) => (await api.http.get(`/jobs/${id}`)).body.status));
      return st.every((s) => s === 'completed');
    }, 10_000, 50);
    const ttl = await store.ctx.redis.pttl(k.rateLimit);
    expect(ttl === -2 || (ttl > 0 && ttl <= 300)).toBe(true);
  });

  it('an old version\'s absurd window alone does not wedge the queue: one job starts, the counter expires within a day', async () => {
    const q = 'bounds-old-window';
    const k = store.ctx.keys(q);
    expect((await api.http.post(`/queues/${q}/pause`)).status).toBe(200);
    await store.ctx.redis.hset(k.meta, 'rlMax', '1', 'rlDur', '100000000000000000000');
    const id = (await api.http.post('/jobs').send({ type: 'diag.echo', queue: q })).body.id;
    expect((await api.http.post(`/queues/${q}/resume`)).status).toBe(200);
    await waitUntil('the job completes', async () => (await api.http.get(`/jobs/${id}`)).body.status === 'completed', 10_000, 50);
    const ttl = await store.ctx.redis.pttl(k.rateLimit);
    expect(ttl).toBeGreaterThan(0);
    expect(ttl).toBeLessThanOrEqual(86_400_000);
    await sleep(10);
  });
});
