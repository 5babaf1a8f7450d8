import { normalizeEnqueue } from '../../../src/core/job-options';
import { killAll, SluiceProcess, startSluice } from '../../support/process';
import { openStore, sleep, TestStore } from '../../support/redis';
import { events, waitBlocked, waitUntil, workerIdOf } from '../../support/timing';

/**
 * C19 — Pause means pause (CASES.md). A worker is blocked waiting for work;
 * the queue is paused and within 50 ms an immediate job and a `delayMs: 1000`
 * job are posted. For 3 s nothing may start (the promoter and the wake-ups
 * keep poking the worker meanwhile). After resume each job runs exactly once.
 */
const QUEUE = 'c19';

let t: TestStore;
let proc: SluiceProcess | undefined;

beforeAll(async () => {
  t = await openStore('c19');
});
afterAll(async () => {
  await killAll([proc]);
  await t.close();
});

test('C19: a paused queue starts nothing for 3 s, jobs stay waiting/delayed; after resume each runs once', async () => {
  proc = await startSluice({ REDIS_PREFIX: t.prefix, QUEUES: QUEUE, ROLE: 'worker,scheduler' });
  const workerId = await workerIdOf(proc);
  await waitBlocked(t.redis, workerId);

  const t0 = Date.now();
  await t.stores.queues.configure(QUEUE, { paused: true });
  const [now] = await t.store.enqueue([normalizeEnqueue({ queue: QUEUE, type: 'diag.echo', payload: { n: 'now' } }, 524288)]);
  const [later] = await t.store.enqueue([normalizeEnqueue({ queue: QUEUE, type: 'diag.echo', payload: { n: 'later' }, delayMs: 1000 }, 524288)]);
  // The case posts both "within 50 ms": three commands back to back do that
  // on a quiet machine (59 ms was seen once on a loaded CI run). What the
  // check needs is that both are posted before the delayed one is due.
  expect(Date.now() - t0).toBeLessThan(1000);
  expect([now.status, later.status]).toEqual(['waiting', 'delayed']);

  await sleep(3000);
  const k = t.keys(QUEUE);
  const ev = await events(t.redis, k.events);
  expect(ev.filter((e) => e.e === 'claimed')).toEqual([]);
  expect(await t.redis.zcard(k.active)).toBe(0);
  const a = await t.store.getJob(QUEUE, now.id);
  const b = await t.store.getJob(QUEUE, later.id);
  expect(a).toMatchObject({ status: 'waiting', attempts: 0, startedAt: null });
  // Past its runAt the delayed job is ready, and a paused queue keeps ready
  // jobs 'waiting' (API.md); it must never be 'active'.
  expect(['waiting', 'delayed']).toContain(b!.status);
  expect(b).toMatchObject({ attempts: 0, startedAt: null });
  expect(await t.stores.queues.liveCounts(QUEUE)).toMatchObject({ active: 0, waiting: b!.status === 'waiting' ? 2 : 1 });

  await t.stores.queues.configure(QUEUE, { paused: false });
  for (const id of [now.id, later.id]) {
    await waitUntil(`job ${id} completed`, async () => (await t.store.getJob(QUEUE, id))?.status === 'completed', 5000);
  }
  await sleep(500); // room for a duplicate run to show up
  for (const id of [now.id, later.id]) {
    const names = (await events(t.redis, k.events, id)).map((e) => e.e);
    expect(names.filter((n) => n === 'claimed')).toHaveLength(1);
    expect(names.filter((n) => n === 'completed')).toHaveLength(1);
    expect(names[names.length - 1]).toBe('completed');
    expect((await t.store.getJob(QUEUE, id))?.attempts).toBe(1);
  }
  expect(await t.stores.queues.liveCounts(QUEUE)).toMatchObject({ waiting: 0, delayed: 0, active: 0 });
}, 30000);
