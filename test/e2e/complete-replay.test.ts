/**
 * A complete sent again with the same lock token (its first answer was lost:
 * a 503 of the answer deadline, a timeout) is accepted — 200 with the job as
 * the first complete left it — also after the history mirror removed the job
 * from Redis (C26, issue 19); a stale token never is, before or after.
 */
import { startExternalQueueApi, type TestApi } from '../support/http';
import type { RedisStores } from '../../src/redis/stores';
import type { RedisClient } from '../../src/redis/connection';
import { waitUntil } from '../support/timing';

const Q = 'replay';
let api: TestApi;
let stores: RedisStores;
let redis: RedisClient;

beforeAll(async () => {
  ({ api, stores, redis } = await startExternalQueueApi('e2e-replay', Q, { ROLE: 'api,audit', AUDIT_THREAD: 'false' }));
});
afterAll(() => api?.close());

const post = (path: string, body: unknown) => api.http.post(path).send(body as object);
const inRedis = async (id: string) => (await redis.exists(`${stores.ctx.keys(Q).base}job:${id}`)) === 1;

async function claimOne(workerId: string): Promise<{ id: string; lockToken: string; executionSeq: number }> {
  const r = await post(`/queues/${Q}/claim`, { workerId, max: 1 });
  expect(r.status).toBe(200);
  expect(r.body.jobs).toHaveLength(1);
  return r.body.jobs[0];
}

test('the same complete again: 200 while Redis holds the job and after the mirror removed it; the first result stays', async () => {
  expect((await post('/jobs', { type: 'ext', queue: Q, payload: {} })).status).toBe(201);
  const c = await claimOne('w1');
  expect(c.lockToken).toMatch(new RegExp(`\\.${c.executionSeq}$`));
  const first = await post(`/jobs/${c.id}/complete`, { lockToken: c.lockToken, result: { n: 1 } });
  expect(first.status).toBe(200);
  // At once (the job may still be in Redis) and once it has left Redis.
  const again = await post(`/jobs/${c.id}/complete`, { lockToken: c.lockToken, result: { n: 2 } });
  expect(again.status).toBe(200);
  expect(again.body).toMatchObject({ id: c.id, status: 'completed', result: { n: 1 }, attempts: 1 });
  await waitUntil('the job mirrored and removed from Redis', async () => !(await inRedis(c.id)) || undefined, 10_000, 50);
  const late = await post(`/jobs/${c.id}/complete`, { lockToken: c.lockToken, result: { n: 3 } });
  expect(late.status).toBe(200);
  expect(late.body).toMatchObject({ id: c.id, status: 'completed', result: { n: 1 }, attempts: 1 });
  // Tokens naming another execution, or none, are refused.
  for (const lockToken of [c.lockToken.replace(/\d+$/, String(c.executionSeq + 1)), c.lockToken.replace(/\.\d+$/, ''), 'x']) {
    const r = await post(`/jobs/${c.id}/complete`, { lockToken });
    expect(r.status).toBe(409);
    expect(r.body.error.code).toBe('lease_lost');
  }
});

test('a stale token (its execution was released, the next one completed) is refused, before and after the job left Redis', async () => {
  expect((await post('/jobs', { type: 'ext', queue: Q, payload: {} })).status).toBe(201);
  const old = await claimOne('w-old');
  expect((await post(`/jobs/${old.id}/release`, { lockToken: old.lockToken })).status).toBe(200);
  const cur = await claimOne('w-new');
  expect(cur.id).toBe(old.id);
  expect(cur.executionSeq).toBe(old.executionSeq + 1);
  expect((await post(`/jobs/${cur.id}/complete`, { lockToken: cur.lockToken, result: 'new' })).status).toBe(200);
  const stale = await post(`/jobs/${old.id}/complete`, { lockToken: old.lockToken, result: 'old' });
  expect(stale.status).toBe(409);
  expect(stale.body.error.code).toBe('lease_lost');
  await waitUntil('the job mirrored and removed from Redis', async () => !(await inRedis(cur.id)) || undefined, 10_000, 50);
  const staleLate = await post(`/jobs/${old.id}/complete`, { lockToken: old.lockToken, result: 'old' });
  expect(staleLate.status).toBe(409);
  expect(staleLate.body.error.code).toBe('lease_lost');
  expect((await api.http.get(`/jobs/${cur.id}`)).body).toMatchObject({ status: 'completed', result: 'new' });
});
