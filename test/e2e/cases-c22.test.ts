import type Redis from 'ioredis';
import { createRedis } from '../../src/redis/connection';
import { type RedisStores } from '../../src/redis/stores';
import { REDIS_STORES } from '../../src/redis/redis.module';
import { startTestApi, TestApi } from '../support/http';
import { REDIS_URL } from '../support/redis';
import { waitUntil } from '../support/timing';

/**
 * C22 — Bad payloads never poison the queue (CASES.md), through HTTP on the
 * full stack (api, worker, scheduler, audit in one process): oversize and
 * non-JSON bodies are refused in the envelope; a lone UTF-16 surrogate is
 * refused with 400 naming the field (docs/guarantees.md: strings with NUL or a lone
 * surrogate are refused everywhere) and the worker is unaffected; job hashes
 * corrupted by hand in Redis go to the DLQ with a decode error while the
 * worker keeps processing the other jobs.
 */
describe('C22: bad payloads never poison the queue (e2e)', () => {
  let api: TestApi;
  let redis: Redis;
  beforeAll(async () => {
    api = await startTestApi('e2e-c22', { ROLE: 'all', WORKER_CONCURRENCY: '2' });
    redis = createRedis({ redisUrl: REDIS_URL, redisClusterNodes: null }) as Redis;
  });
  afterAll(async () => {
    redis?.disconnect();
    await api?.close();
  });

  const get = async (id: string) => (await api.http.get(`/jobs/${id}`)).body;
  const completed = (ids: string[]) =>
    waitUntil(`${ids.length} jobs completed`, async () => (await Promise.all(ids.map(get))).every((j) => j.status === 'completed'), 20000, 50);

  it('a 10 MB body → 413 payload_too_large', async () => {
    const body = JSON.stringify({ type: 'diag.echo', payload: { blob: 'x'.repeat(10 * 1024 * 1024) } });
    const res = await api.http.post('/jobs').set('Content-Type', 'application/json').send(body);
    expect(res.status).toBe(413);
    expect(res.body.error.code).toBe('payload_too_large');
    // Under the body limit but over MAX_PAYLOAD_BYTES: refused by the payload check.
    const mid = await api.http.post('/jobs').send({ type: 'diag.echo', payload: { blob: 'x'.repeat(600_000) } });
    expect(mid.status).toBe(413);
  });

  it.each([
    ['truncated JSON', 'application/json', '{"type": "diag.echo", "payload": {'],
    ['not JSON at all', 'application/json', 'hello world'],
    ['a JSON array', 'application/json', '[1,2,3]'],
  ])('non-JSON body (%s) → 400 validation_failed', async (_name, type, text) => {
    const res = await api.http.post('/jobs').set('Content-Type', type).send(text);
    expect(res.status).toBe(400);
    expect(res.body.error.code).toBe('validation_failed');
    expect(res.body.error.requestId).toEqual(expect.any(String));
  });

  it('a body that is not declared JSON (text/plain) → 415 unsupported_media_type (API.md v1.1)', async () => {
    const res = await api.http.post('/jobs').set('Content-Type', 'text/plain').send('type=diag.echo');
    expect(res.status).toBe(415);
    expect(res.body.error.code).toBe('unsupported_media_type');
  });

  it('a lone UTF-16 surrogate is refused with 400 naming the field; the worker goes on', async () => {
    // Raw JSON text: the escapes reach the server as written (lone surrogates cannot be UTF-8).
    const payloadText = '{"ok":"😀","lone":"\\ud800"}';
    const res = await api.http.post('/jobs').set('Content-Type', 'application/json').send(`{"type":"diag.echo","queue":"c22-lone","payload":${payloadText}}`);
    expect(res.status).toBe(400);
    expect(res.body.error).toMatchObject({ code: 'validation_failed', details: [{ path: 'payload.lone', message: expect.stringMatching(/lone UTF-16 surrogate/) }] });
    expect((await api.http.get('/queues/c22-lone')).status).toBe(404);
    // A valid pair, escaped as JSON encoders with ASCII output send it, is stored and read back.
    const pair = await api.http.post('/jobs').set('Content-Type', 'application/json').send('{"type":"diag.echo","payload":{"pair":"\\ud83d\\ude00"}}');
    expect(pair.status).toBe(201);
    await completed([pair.body.id]);
    expect((await api.http.get(`/jobs/${pair.body.id}`)).body).toMatchObject({ payload: { pair: '😀' }, result: { pair: '😀' } });
  });

  it('job hashes corrupted by hand go to the DLQ with a decode error while the worker goes on', async () => {
    const q = 'c22http';
    const store = api.app.get<RedisStores>(REDIS_STORES);
    // Paused while we corrupt, so the worker cannot take the victims first.
    await store.queues.configure(q, { paused: true });
    const corruptions: [string, (key: string) => Promise<unknown>][] = [
      ["garbage in 's'", (k) => redis.hset(k, 's', 'z\u0000garbage')],
      ["'ty' missing", (k) => redis.hdel(k, 'ty')],
      ["payload chunk 'p0' not JSON", (k) => redis.hset(k, 'p0', '{"half": ')],
      ['key replaced by a string', (k) => redis.multi().del(k).set(k, 'not a hash').exec()],
    ];
    const victims: string[] = [];
    for (const [name, corrupt] of corruptions) {
      const { body } = await api.http.post('/jobs').send({ type: 'diag.echo', queue: q, payload: { victim: name } });
      await corrupt(`${api.prefix}:{${q}}:job:${body.id}`);
      victims.push(body.id);
    }
    const good: string[] = [];
    for (let i = 0; i < 5; i++) good.push((await api.http.post('/jobs').send({ type: 'diag.echo', queue: q, payload: { good: i } })).body.id);
    await store.queues.configure(q, { paused: false });

    await completed(good);
    const dead = await waitUntil('victims in the DLQ listing', async () => {
      const items = (await api.http.get('/jobs/dlq/all').query({ queue: q })).body.items as { id: string; lastError: string; status: string }[];
      return items.length === victims.length && items;
    }, 20000, 100);
    expect(dead.map((j) => j.id).sort()).toEqual([...victims].sort());
    for (const j of dead) {
      expect(j.status).toBe('failed');
      expect(j.lastError).toMatch(/^decode error/);
    }
    // Each victim stays readable by id, failed with its decode error.
    for (const id of victims) {
      const res = await api.http.get(`/jobs/${id}`);
      expect(res.status).toBe(200);
      expect(res.body.status).toBe('failed');
      expect(res.body.lastError).toMatch(/^decode error/);
    }
    // The worker keeps processing jobs enqueued after all this.
    const more: string[] = [];
    for (let i = 0; i < 3; i++) more.push((await api.http.post('/jobs').send({ type: 'diag.echo', queue: q, payload: { more: i } })).body.id);
    await completed(more);
  }, 60000);
});
