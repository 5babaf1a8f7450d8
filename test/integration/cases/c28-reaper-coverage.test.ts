/**
 * C28 (CASES.md): the reaper reaches every expired lease, not just the first window.
 *
 * One app (ROLE=api,scheduler: the HTTP claim protocol and the lease reaper,
 * REAPER_INTERVAL_MS 250) on an external queue of 800 jobs. Worker `live`
 * claims 300 (lease 4 s) and heartbeats them every second; worker `silent`
 * claims the next 300 (lease 1.5 s) and never speaks again. Within lease + 4
 * reaper intervals every one of the silent 300 is back to waiting (one
 * `stalled` event each, stamped no later than its lease end + 4 intervals),
 * none of the live 300 is touched (still active, attempt 1, their token
 * completes them), and a late complete from the silent worker gets 409
 * lease_lost.
 */
import { startExternalQueueApi, type TestApi } from '../../support/http';
import type { RedisClient } from '../../../src/redis/connection';
import type { RedisStores } from '../../../src/redis/stores';
import { sleep, readEvents } from '../../support/redis';
import { waitUntil } from '../../support/cases';

const Q = 'c28';
const TOTAL = 800;
const HELD = 300;
const REAPER_MS = 250;
// Kept alive by heartbeats every second; long enough that a slow round of 300
// heartbeats on a loaded machine does not let one expire.
const LIVE_LEASE_MS = 10_000;
const SILENT_LEASE_MS = 1500;

interface Claimed {
  id: string;
  lockToken: string;
  leaseExpiresAt: string;
}

let api: TestApi;
let redis: RedisClient;
let stores: RedisStores;

beforeAll(async () => {
  ({ api, stores, redis } = await startExternalQueueApi('c28', Q, { ROLE: 'api,scheduler', REAPER_INTERVAL_MS: String(REAPER_MS) }));
});
afterAll(() => api?.close());

/** Claims `n` jobs (100 per call) for `workerId` with `leaseMs`. */
async function claimN(workerId: string, n: number, leaseMs: number): Promise<Claimed[]> {
  const out: Claimed[] = [];
  while (out.length < n) {
    const r = await api.http.post(`/queues/${Q}/claim`).send({ workerId, max: Math.min(100, n - out.length), leaseMs });
    expect(r.status).toBe(200);
    expect(r.body.jobs.length).toBeGreaterThan(0);
    out.push(...(r.body.jobs as Claimed[]));
  }
  return out;
}

const counts = async () => (await api.http.get(`/queues/${Q}`)).body.counts as { waiting: number; active: number };

test('C28 every expired lease is reaped, live leases are untouched, the late complete gets 409', async () => {
  const jobs = Array.from({ length: TOTAL }, (_, i) => ({ type: 'ext.work', queue: Q, payload: { i } }));
  const enq = await api.http.post('/jobs/batch').send({ jobs });
  expect(enq.status).toBe(201);
  expect(enq.body.jobs).toHaveLength(TOTAL);

  const live = await claimN('live', HELD, LIVE_LEASE_MS);
  let beating = true;
  const heartbeats = (async () => {
    while (beating) {
      const res = await Promise.all(live.map((c) => api.http.post(`/jobs/${c.id}/heartbeat`).send({ lockToken: c.lockToken })));
      for (const r of res) expect(r.status).toBe(200);
      await sleep(1000);
    }
  })();

  const silent = await claimN('silent', HELD, SILENT_LEASE_MS);
  const liveIds = new Set(live.map((c) => c.id));
  expect(silent.every((c) => !liveIds.has(c.id))).toBe(true);
  expect(await counts()).toMatchObject({ waiting: TOTAL - 2 * HELD, active: 2 * HELD });
  const lastSilentLease = Math.max(...silent.map((c) => Date.parse(c.leaseExpiresAt)));

  // All 300 back within lease + 4 reaper intervals (wall clock here; the
  // precise check on Redis time is on the events below).
  await waitUntil(
    'the 300 silent leases back to waiting',
    async () => (await counts()).waiting === TOTAL - HELD,
    Math.max(0, lastSilentLease - Date.now()) + 4 * REAPER_MS + 500,
    25,
  );

  const events = (await readEvents(redis, stores.ctx.keys(Q).events)).filter((e) => e.e !== 'log');
  const stalled = events.filter((e) => e.e === 'stalled');
  const leaseEnd = new Map(silent.map((c) => [c.id, Date.parse(c.leaseExpiresAt)]));
  // Exactly the silent 300, once each, each within its lease + 4 reaper intervals.
  expect(stalled.map((e) => e.j).sort()).toEqual([...leaseEnd.keys()].sort());
  const late = stalled.filter((e) => Number(e.at) > (leaseEnd.get(e.j) as number) + 4 * REAPER_MS);
  expect(late.map((e) => `${e.j}: ${Number(e.at) - (leaseEnd.get(e.j) as number)} ms after its lease`)).toEqual([]);
  expect(stalled.every((e) => e.r === 'lease_expired' && e.w === 'silent')).toBe(true);

  for (const c of silent.slice(0, 20)) {
    const j = (await api.http.get(`/jobs/${c.id}`)).body;
    expect(j).toMatchObject({ status: 'waiting', attempts: 1 });
  }

  // The live 300: no event after their claim, still active on attempt 1.
  const touched = events.filter((e) => liveIds.has(e.j) && e.e !== 'enqueued' && e.e !== 'claimed');
  expect(touched).toEqual([]);
  for (const c of live.slice(0, 20)) {
    expect((await api.http.get(`/jobs/${c.id}`)).body).toMatchObject({ status: 'active', attempts: 1, workerId: 'live' });
  }

  // A late complete from the silent worker: 409 lease_lost, the job stays waiting.
  const lateDone = await api.http.post(`/jobs/${silent[0].id}/complete`).send({ lockToken: silent[0].lockToken, result: 'late' });
  expect(lateDone.status).toBe(409);
  expect(lateDone.body.error.code).toBe('lease_lost');
  expect((await api.http.get(`/jobs/${silent[0].id}`)).body).toMatchObject({ status: 'waiting', result: null });

  // The live worker's tokens are all still good (heartbeats stop only now:
  // a live lease must not run out while the checks above run).
  beating = false;
  await heartbeats;
  const done = await Promise.all(live.map((c) => api.http.post(`/jobs/${c.id}/complete`).send({ lockToken: c.lockToken })));
  expect(done.filter((r) => r.status !== 200)).toEqual([]);
  expect(await counts()).toMatchObject({ waiting: TOTAL - HELD, active: 0 });
}, 60_000);
