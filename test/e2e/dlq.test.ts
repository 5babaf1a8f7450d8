import type Redis from 'ioredis';
import { createRedis } from '../../src/redis/connection';
import { startTestApi, TestApi } from '../support/http';
import { REDIS_URL } from '../support/redis';
import { waitUntil } from '../support/timing';

const UNKNOWN = '01a22977-706d-723e-926f-fd3ef1eef745';
type J = { id: string; status: string; queue: string; type: string; attempts: number; lastError: string | null };

/**
 * Dead-letter queue endpoints (API.md "Dead-letter queue") on the full stack:
 * listing, single and bulk retry, purge, and their contract errors.
 */
describe('dead-letter queue (e2e)', () => {
  let api: TestApi;
  let redis: Redis;
  beforeAll(async () => {
    api = await startTestApi('e2e-dlq', { ROLE: 'api,worker,audit', WORKER_CONCURRENCY: '8' });
    redis = createRedis({ redisUrl: REDIS_URL, redisClusterNodes: null }) as Redis;
  });
  afterAll(async () => {
    redis?.disconnect();
    await api?.close();
  });

  /** Enqueues jobs that fail on every attempt, once: they land in the DLQ. */
  async function deadLetter(queue: string, n: number, type = 'diag.fail'): Promise<string[]> {
    const payload = type === 'send_email' ? { to: 'not-an-address', subject: 's' } : { message: `boom-${queue}` };
    const res = await api.http.post('/jobs/batch').send({ jobs: Array.from({ length: n }, () => ({ type, queue, payload, maxAttempts: 1 })) });
    expect(res.status).toBe(201);
    return res.body.jobs.map((j: J) => j.id);
  }
  const dlq = async (query: Record<string, string | number> = {}) => {
    const res = await api.http.get('/jobs/dlq/all').query(query);
    expect(res.status).toBe(200);
    return res.body as { items: J[]; nextCursor: string | null };
  };
  const dlqIds = async (query: Record<string, string | number> = {}) => (await dlq({ limit: 500, ...query })).items.map((j) => j.id).sort();
  const waitDlq = (query: Record<string, string | number>, ids: string[]) =>
    waitUntil(`DLQ ${JSON.stringify(query)} = ${ids.length} jobs`, async () => JSON.stringify(await dlqIds(query)) === JSON.stringify([...ids].sort()), 20000, 100);

  it('lists failed jobs newest first with lastError, filters by queue and type, pages by cursor', async () => {
    const a = await deadLetter('dlqa', 7);
    const b = await deadLetter('dlqb', 3, 'send_email');
    await waitDlq({ queue: 'dlqa' }, a);
    await waitDlq({ queue: 'dlqb' }, b);
    const page = await dlq({ queue: 'dlqa' });
    expect(page.items.every((j) => j.status === 'failed' && j.lastError === 'boom-dlqa' && j.attempts === 1)).toBe(true);
    expect((await dlqIds({ type: 'send_email' }))).toEqual([...b].sort());
    // Pages of 3: 7 jobs in 3 pages, no overlap, no skip.
    const seen: string[] = [];
    let cursor: string | null = null;
    let pages = 0;
    do {
      const p = await dlq(cursor ? { queue: 'dlqa', limit: 3, cursor } : { queue: 'dlqa', limit: 3 });
      seen.push(...p.items.map((j) => j.id));
      cursor = p.nextCursor;
      pages++;
    } while (cursor && pages < 10);
    expect(pages).toBe(3);
    expect([...seen].sort()).toEqual([...a].sort());
    expect(new Set(seen).size).toBe(7);
  });

  it('POST /jobs/:id/retry → 200 waiting, attempts 0, new payload; failing again sends it back to the DLQ', async () => {
    const [id] = await deadLetter('dlqr', 1);
    await waitDlq({ queue: 'dlqr' }, [id]);
    const res = await api.http.post(`/jobs/${id}/retry`).send({ payload: { message: 'again', times: 5 } });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ id, status: 'waiting', attempts: 0, payload: { message: 'again', times: 5 } });
    // maxAttempts 1 and diag.fail always fails: back in the DLQ, after a retried_from_dlq event.
    await waitUntil('failed again', async () => {
      const ev = (await api.http.get(`/jobs/${id}/events`)).body.items.map((e: { event: string }) => e.event);
      return JSON.stringify(ev) === JSON.stringify(['enqueued', 'claimed', 'failed', 'retried_from_dlq', 'claimed', 'failed']);
    }, 20000, 100);
    const execs = (await api.http.get(`/jobs/${id}/executions`)).body.items;
    expect(execs.map((x: { executionSeq: number; attempt: number }) => [x.executionSeq, x.attempt])).toEqual([[1, 1], [2, 1]]);
  });

  it('POST /jobs/:id/retry without a body keeps the payload', async () => {
    const [id] = await deadLetter('dlqr2', 1);
    await waitDlq({ queue: 'dlqr2' }, [id]);
    const res = await api.http.post(`/jobs/${id}/retry`);
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ status: 'waiting', attempts: 0, payload: { message: 'boom-dlqr2' } });
  });

  it('POST /jobs/:id/retry: 409 unless failed/cancelled, 404 unknown, 400 bad body, 413 oversize', async () => {
    const waiting = (await api.http.post('/jobs').send({ type: 'diag.echo', delayMs: 3_600_000 })).body;
    const r409 = await api.http.post(`/jobs/${waiting.id}/retry`).send({});
    expect(r409.status).toBe(409);
    expect(r409.body.error.code).toBe('conflict');
    const done = (await api.http.post('/jobs').send({ type: 'diag.echo' })).body;
    await waitUntil('completed', async () => (await api.http.get(`/jobs/${done.id}`)).body.status === 'completed', 15000, 50);
    expect((await api.http.post(`/jobs/${done.id}/retry`)).status).toBe(409);
    for (const id of [UNKNOWN, 'nope']) expect((await api.http.post(`/jobs/${id}/retry`)).status).toBe(404);
    const bad = await api.http.post(`/jobs/${waiting.id}/retry`).send({ payload: [1], extra: true });
    expect(bad.status).toBe(400);
    expect(bad.body.error.details.map((d: { path: string }) => d.path).sort()).toEqual(['extra', 'payload']);
    const big = await api.http.post(`/jobs/${waiting.id}/retry`).send({ payload: { blob: 'x'.repeat(600_000) } });
    expect(big.status).toBe(413);
  });

  it('retries a cancelled job, also after Redis pruned it (recreated from PostgreSQL)', async () => {
    const { body } = await api.http.post('/jobs').send({ type: 'diag.echo', queue: 'dlqc', delayMs: 3_600_000, payload: { v: 1 }, priority: 'high' });
    expect((await api.http.delete(`/jobs/${body.id}`)).status).toBe(200);
    const key = `${api.prefix}:{dlqc}:job:${body.id}`;
    await waitUntil('cancelled job pruned from Redis', async () => (await redis.exists(key)) === 0, 20000, 50);
    const res = await api.http.post(`/jobs/${body.id}/retry`).send({ payload: { v: 2 } });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ id: body.id, status: 'waiting', attempts: 0, priority: 10, queue: 'dlqc', type: 'diag.echo', payload: { v: 2 } });
    await waitUntil('revived job completed', async () => (await api.http.get(`/jobs/${body.id}`)).body.status === 'completed', 15000, 50);
    const got = (await api.http.get(`/jobs/${body.id}`)).body;
    expect(got.result).toEqual({ v: 2 });
    const ev = await waitUntil('events mirrored', async () => {
      const items = (await api.http.get(`/jobs/${body.id}/events`)).body.items.map((e: { event: string }) => e.event);
      return items.includes('completed') && items;
    }, 20000, 100);
    expect(ev).toEqual(['enqueued', 'cancelled', 'retried_from_dlq', 'claimed', 'completed']);
    // A second retry of a completed job is refused.
    expect((await api.http.post(`/jobs/${body.id}/retry`)).status).toBe(409);
  });

  it('refuses to bring back a cancelled job whose history is leaving the retention window (retention retires it whole)', async () => {
    const { body } = await api.http.post('/jobs').send({ type: 'diag.echo', queue: 'dlqold', delayMs: 3_600_000, payload: { v: 1 } });
    expect((await api.http.delete(`/jobs/${body.id}`)).status).toBe(200);
    const key = `${api.prefix}:{dlqold}:job:${body.id}`;
    await waitUntil('cancelled job pruned from Redis', async () => (await redis.exists(key)) === 0, 20000, 50);
    // As if it had been cancelled 30 days ago (RETENTION_DAYS' default): its day is about to be retired.
    await api.db.dataSource.query(`UPDATE jobs SET finished_at = now() - interval '30 days' + interval '30 minutes' WHERE id = $1`, [body.id]);
    const res = await api.http.post(`/jobs/${body.id}/retry`);
    expect(res.status).toBe(409);
    expect(res.body.error.message).toMatch(/retention window/);
    expect(await redis.exists(key)).toBe(0);
  });

  it('POST /jobs/dlq/retry retries by queue and type → {retried: n}', async () => {
    const fail = await deadLetter('dlqbulk', 4);
    const mail = await deadLetter('dlqbulk', 2, 'send_email');
    await waitDlq({ queue: 'dlqbulk' }, [...fail, ...mail]);
    const res = await api.http.post('/jobs/dlq/retry').send({ queue: 'dlqbulk', type: 'send_email' });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ retried: 2 });
    // send_email with a bad address is unrecoverable: both fail again, each after a retried_from_dlq event.
    for (const id of mail) {
      await waitUntil('retried and failed again', async () => {
        const ev = (await api.http.get(`/jobs/${id}/events`)).body.items.map((e: { event: string }) => e.event);
        return ev.filter((e: string) => e === 'failed').length === 2 && ev.includes('retried_from_dlq');
      }, 20000, 100);
    }
    for (const id of fail) expect((await api.http.get(`/jobs/${id}/events`)).body.items.map((e: { event: string }) => e.event)).not.toContain('retried_from_dlq');
    const none = await api.http.post('/jobs/dlq/retry').send({ queue: 'dlqbulk', type: 'no_such' });
    expect(none.body).toEqual({ retried: 0 });
    const bad = await api.http.post('/jobs/dlq/retry').send({ queue: 'Bad Queue!', other: 1 });
    expect(bad.status).toBe(400);
    expect(bad.body.error.details.map((d: { path: string }) => d.path).sort()).toEqual(['other', 'queue']);
  });

  it('DELETE /jobs/dlq?queue= purges one queue: {purged: n}, the history stays, retry then 409', async () => {
    const gone = await deadLetter('dlqp1', 5);
    const kept = await deadLetter('dlqp2', 2);
    await waitDlq({ queue: 'dlqp1' }, gone);
    await waitDlq({ queue: 'dlqp2' }, kept);
    const res = await api.http.delete('/jobs/dlq').query({ queue: 'dlqp1' });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ purged: 5 });
    await waitDlq({ queue: 'dlqp1' }, []);
    expect(await dlqIds({ queue: 'dlqp2' })).toEqual([...kept].sort());
    expect(await redis.zcard(`${api.prefix}:{dlqp1}:failed`)).toBe(0);
    for (const id of gone) {
      expect(await redis.exists(`${api.prefix}:{dlqp1}:job:${id}`)).toBe(0);
      const job = await api.http.get(`/jobs/${id}`);
      expect(job.status).toBe(200);
      expect(job.body).toMatchObject({ status: 'failed', lastError: 'boom-dlqp1' });
      const ev = (await api.http.get(`/jobs/${id}/events`)).body.items.map((e: { event: string }) => e.event);
      expect(ev).toEqual(['enqueued', 'claimed', 'failed', 'purged']);
      expect((await api.http.get(`/jobs/${id}/executions`)).body.items).toHaveLength(1);
    }
    const retry = await api.http.post(`/jobs/${gone[0]}/retry`);
    expect(retry.status).toBe(409);
    expect(retry.body.error.message).toContain('purged');
    expect((await api.http.post('/jobs/dlq/retry').send({ queue: 'dlqp1' })).body).toEqual({ retried: 0 });
    expect((await api.http.delete('/jobs/dlq').query({ queue: 'dlqp1' })).body).toEqual({ purged: 0 });
    expect((await api.http.delete('/jobs/dlq').query({ queue: 'BAD!' })).status).toBe(400);
  });

  it('DELETE /jobs/dlq without a queue purges every queue', async () => {
    await deadLetter('dlqp3', 2);
    await waitUntil('DLQ has jobs', async () => (await dlqIds()).length >= 2, 20000, 100);
    const res = await api.http.delete('/jobs/dlq');
    expect(res.status).toBe(200);
    expect(res.body.purged).toBeGreaterThanOrEqual(2);
    await waitUntil('DLQ empty', async () => (await dlqIds()).length === 0, 20000, 100);
  });

  it('GET /jobs/dlq/all: 400 naming a bad limit or cursor', async () => {
    for (const [qs, field] of [['limit=0', 'limit'], ['limit=x', 'limit'], ['cursor=%%%', 'cursor'], ['cursor=abc', 'cursor'], ['status=failed', 'status']]) {
      const res = await api.http.get(`/jobs/dlq/all?${qs}`);
      expect(res.status).toBe(400);
      expect(res.body.error.details.map((d: { path: string }) => d.path)).toContain(field);
    }
  });
});
