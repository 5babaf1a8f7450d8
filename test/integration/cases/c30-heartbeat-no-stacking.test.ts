/**
 * C30 (CASES.md): heartbeats set the lease to now + lease length; they never stack.
 *
 * One app (ROLE=api,scheduler: the HTTP claim protocol and the lease reaper,
 * REAPER_INTERVAL_MS 200). An external worker claims a job with a 2 s lease
 * and heartbeats it 50 times in 1 s. Every answer, and the job's score in the
 * active set after the last one, is that heartbeat's Redis time + 2 s (never
 * more), so the lease ends ≈ one lease length after the last heartbeat. The
 * worker then "crashes" (goes silent): the job is reclaimed (`stalled`, back
 * to waiting) within lease + reaper interval of the last heartbeat.
 */
import { startExternalQueueApi, type TestApi } from '../../support/http';
import type { RedisClient } from '../../../src/redis/connection';
import type { RedisStores } from '../../../src/redis/stores';
import { readEvents, sleep } from '../../support/redis';
import { redisNow, waitUntil } from '../../support/cases';

const Q = 'c30';
const LEASE_MS = 2000;
const REAPER_MS = 200;
const BEATS = 50;

let api: TestApi;
let redis: RedisClient;
let stores: RedisStores;

beforeAll(async () => {
  ({ api, stores, redis } = await startExternalQueueApi('c30', Q, { ROLE: 'api,scheduler', REAPER_INTERVAL_MS: String(REAPER_MS) }));
});
afterAll(() => api?.close());

test('C30 50 heartbeats in 1 s leave one lease length after the last; a crash is reclaimed within lease + reaper interval', async () => {
  const enq = await api.http.post('/jobs').send({ type: 'ext.work', queue: Q, payload: {}, maxAttempts: 3 });
  expect(enq.status).toBe(201);
  const claimed = await api.http.post(`/queues/${Q}/claim`).send({ workerId: 'hb', leaseMs: LEASE_MS });
  const [c] = claimed.body.jobs as { id: string; lockToken: string; leaseExpiresAt: string }[];
  expect(c.id).toBe(enq.body.id);

  const keys = stores.ctx.keys(Q);
  const began = Date.now();
  const beats: { before: number; after: number; lease: number }[] = [];
  for (let i = 0; i < BEATS; i++) {
    const before = await redisNow(redis);
    const r = await api.http.post(`/jobs/${c.id}/heartbeat`).send({ lockToken: c.lockToken });
    const after = await redisNow(redis);
    expect(r.status).toBe(200);
    beats.push({ before, after, lease: Date.parse(r.body.leaseExpiresAt) });
    await sleep(Math.max(0, Math.round(((i + 1) * 1000) / BEATS) - (Date.now() - began)));
  }
  expect(Date.now() - began).toBeLessThan(1500);

  // Each answer: that heartbeat's time + one lease, never more (no stacking).
  const off = beats.filter((b) => b.lease < b.before + LEASE_MS || b.lease > b.after + LEASE_MS);
  expect(off).toEqual([]);
  const last = beats[BEATS - 1];
  const score = Number(await redis.zscore(keys.active, c.id));
  expect(score).toBe(last.lease);
  expect(score - last.after).toBeLessThanOrEqual(LEASE_MS);
  expect(score - last.before).toBeGreaterThanOrEqual(LEASE_MS);
  // Far from 50 stacked leases.
  expect(score - beats[0].before).toBeLessThan(LEASE_MS + 1500);

  // The worker crashes: no more heartbeats. Reclaimed within lease + reaper interval.
  const stalled = await waitUntil(
    'the stalled event',
    async () => (await readEvents(redis, keys.events)).find((e) => e.e === 'stalled' && e.j === c.id),
    LEASE_MS + REAPER_MS + 2000,
    20,
  );
  expect(Number(stalled.at)).toBeGreaterThanOrEqual(score);
  expect(Number(stalled.at) - last.after).toBeLessThanOrEqual(LEASE_MS + REAPER_MS);
  expect(stalled).toMatchObject({ r: 'lease_expired', w: 'hb' });
  expect((await api.http.get(`/jobs/${c.id}`)).body).toMatchObject({ status: 'waiting', attempts: 1 });
  const late = await api.http.post(`/jobs/${c.id}/heartbeat`).send({ lockToken: c.lockToken });
  expect(late.status).toBe(409);
}, 30_000);
