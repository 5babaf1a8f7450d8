import type Redis from 'ioredis';
import { createRedis } from '../../src/redis/connection';
import { type RedisStores } from '../../src/redis/stores';
import { REDIS_STORES } from '../../src/redis/redis.module';
import { startTestApi, TestApi } from '../support/http';
import { REDIS_URL } from '../support/redis';
import { waitUntil } from '../support/timing';

const ISO = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/;
const UNKNOWN = '01a22977-706d-723e-926f-fd3ef1eef745';

/**
 * GET /jobs/:id/events, /executions, /logs and DELETE /jobs/:id (API.md
 * "Jobs") on the full stack (api, worker, audit in one process).
 */
describe('job history and cancel (e2e)', () => {
  let api: TestApi;
  let redis: Redis;
  beforeAll(async () => {
    api = await startTestApi('e2e-jobs-history', { ROLE: 'api,worker,audit', WORKER_CONCURRENCY: '4' });
    redis = createRedis({ redisUrl: REDIS_URL, redisClusterNodes: null }) as Redis;
  });
  afterAll(async () => {
    redis?.disconnect();
    await api?.close();
  });

  const status = async (id: string) => (await api.http.get(`/jobs/${id}`)).body.status as string;
  /** Polls a history endpoint until `ok` holds for its items (the mirror lags a little). */
  const history = async (id: string, what: string, ok: (items: any[]) => boolean): Promise<any[]> =>
    waitUntil(`${what} of ${id}`, async () => {
      const res = await api.http.get(`/jobs/${id}/${what}`);
      expect(res.status).toBe(200);
      return ok(res.body.items) && res.body.items;
    }, 20000, 100);

  it('events, executions and logs of a completed job, oldest first, times ISO', async () => {
    const created = await api.http.post('/jobs').send({ type: 'send_email', payload: { to: 'a@b.c', subject: 'hi' } });
    expect(created.status).toBe(201);
    const id = created.body.id;
    const events = await history(id, 'events', (items) => items.some((e) => e.event === 'completed'));
    expect(events.map((e) => e.event)).toEqual(['enqueued', 'claimed', 'completed']);
    expect(events[0]).toMatchObject({ from: null, to: 'waiting', data: { to: 'a@b.c', subject: 'hi' } });
    expect(events[2]).toMatchObject({ from: 'active', to: 'completed', attempt: 1 });
    expect(events[2].workerId).toEqual(expect.any(String));
    for (const e of events) {
      expect(e.at).toMatch(ISO);
      expect(Object.keys(e).sort()).toEqual(['at', 'attempt', 'data', 'error', 'event', 'from', 'reason', 'seq', 'to', 'workerId']);
    }
    // seq: the event's position in the job's timeline.
    expect(events.map((e) => e.seq)).toEqual([1, 2, 3]);

    const execs = await history(id, 'executions', (items) => items.length === 1 && items[0].outcome === 'completed');
    expect(execs[0]).toMatchObject({ executionSeq: 1, attempt: 1, outcome: 'completed', error: null, workerId: events[2].workerId });
    expect(execs[0].startedAt).toMatch(ISO);
    expect(execs[0].finishedAt).toMatch(ISO);
    expect(Date.parse(execs[0].finishedAt)).toBeGreaterThanOrEqual(Date.parse(execs[0].startedAt));
    expect(execs[0].durationMs).toEqual(expect.any(Number));

    const logs = await history(id, 'logs', (items) => items.length === 1);
    expect(logs[0]).toMatchObject({ attempt: 1, level: 'info', message: 'sending "hi" (0 chars)' });
    expect(logs[0].at).toMatch(ISO);
  });

  it('an execution still running shows outcome running and finishedAt null', async () => {
    const { body } = await api.http.post('/jobs').send({ type: 'diag.sleep', payload: { ms: 60000 } });
    const execs = await history(body.id, 'executions', (items) => items.length === 1);
    expect(execs[0]).toMatchObject({ outcome: 'running', finishedAt: null, durationMs: null });
    expect((await api.http.delete(`/jobs/${body.id}`)).status).toBe(202);
  });

  it.each(['events', 'executions', 'logs'])('GET /jobs/:id/%s of an unknown or malformed id → 404', async (what) => {
    for (const id of [UNKNOWN, 'not-a-uuid']) {
      const res = await api.http.get(`/jobs/${id}/${what}`);
      expect(res.status).toBe(404);
      expect(res.body.error.code).toBe('not_found');
    }
  });

  it('cancel a delayed job → 200 cancelled, then 409; audit shows cancelled', async () => {
    const { body } = await api.http.post('/jobs').send({ type: 'diag.echo', delayMs: 3_600_000 });
    expect(body.status).toBe('delayed');
    const res = await api.http.delete(`/jobs/${body.id}`);
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ id: body.id, status: 'cancelled' });
    expect(res.body.finishedAt).toMatch(ISO);
    const again = await api.http.delete(`/jobs/${body.id}`);
    expect(again.status).toBe(409);
    expect(again.body.error.code).toBe('conflict');
    const events = await history(body.id, 'events', (items) => items.some((e) => e.event === 'cancelled'));
    expect(events.map((e) => e.event)).toEqual(['enqueued', 'cancelled']);
  });

  it('cancel a waiting job (paused queue) → 200 cancelled and it never runs', async () => {
    await api.app.get<RedisStores>(REDIS_STORES).queues.configure('cpaused', { paused: true });
    const { body } = await api.http.post('/jobs').send({ type: 'diag.echo', queue: 'cpaused' });
    expect(body.status).toBe('waiting');
    const res = await api.http.delete(`/jobs/${body.id}`);
    expect(res.status).toBe(200);
    expect(res.body.status).toBe('cancelled');
    expect((await api.http.get(`/jobs/${body.id}`)).body.status).toBe('cancelled');
  });

  it('cancel an active job → 202, its AbortSignal fires and it ends cancelled', async () => {
    const { body } = await api.http.post('/jobs').send({ type: 'diag.sleep', payload: { ms: 120000 } });
    await waitUntil('job active', async () => (await status(body.id)) === 'active', 15000, 50);
    const asked = Date.now();
    const res = await api.http.delete(`/jobs/${body.id}`);
    expect(res.status).toBe(202);
    expect(res.body).toMatchObject({ id: body.id, status: 'active', cancelRequested: true });
    await waitUntil('job cancelled', async () => (await status(body.id)) === 'cancelled', 15000, 50);
    // Far sooner than the 120 s sleep: the handler was aborted.
    expect(Date.now() - asked).toBeLessThan(15000);
    const events = await history(body.id, 'events', (items) => items.some((e) => e.event === 'cancelled'));
    expect(events.map((e) => e.event)).toEqual(['enqueued', 'claimed', 'cancel_requested', 'cancelled']);
    const execs = await history(body.id, 'executions', (items) => items[0]?.outcome === 'cancelled');
    expect(execs).toHaveLength(1);
    // A second DELETE of the now terminal job.
    expect((await api.http.delete(`/jobs/${body.id}`)).status).toBe(409);
  });

  it('cancel a completed job → 409, also once Redis has pruned it (served from PostgreSQL)', async () => {
    const { body } = await api.http.post('/jobs').send({ type: 'diag.echo', payload: { x: 1 } });
    const key = `${api.prefix}:{default}:job:${body.id}`;
    await waitUntil('completed job pruned from Redis', async () => (await status(body.id)) === 'completed' && (await redis.exists(key)) === 0, 20000, 50);
    const res = await api.http.delete(`/jobs/${body.id}`);
    expect(res.status).toBe(409);
    expect(res.body.error).toMatchObject({ code: 'conflict' });
    expect(res.body.error.message).toContain('completed');
  });

  it('cancel a cancelled job pruned from Redis → 409, not 404', async () => {
    const { body } = await api.http.post('/jobs').send({ type: 'diag.echo', delayMs: 3_600_000 });
    expect((await api.http.delete(`/jobs/${body.id}`)).status).toBe(200);
    const key = `${api.prefix}:{default}:job:${body.id}`;
    await waitUntil('cancelled job pruned from Redis', async () => (await redis.exists(key)) === 0, 20000, 50);
    const res = await api.http.delete(`/jobs/${body.id}`);
    expect(res.status).toBe(409);
  });

  it('cancel an unknown id → 404', async () => {
    for (const id of [UNKNOWN, 'nope']) {
      const res = await api.http.delete(`/jobs/${id}`);
      expect(res.status).toBe(404);
      expect(res.body.error.code).toBe('not_found');
    }
  });
});
