import { EnqueueInput, normalizeEnqueue } from '../../../src/core/job-options';
import { killAll, SluiceProcess, startSluice } from '../../support/process';
import { openStore, sleep, TestStore } from '../../support/redis';
import { events, StreamEvent, waitForEvent, waitUntil, workerIdOf } from '../../support/timing';

/**
 * C20 — Priority and FIFO (CASES.md). One worker process at concurrency 1 is
 * busy with a long job while others queue up; the order of their starts is
 * read from the `claimed` events.
 */
let t: TestStore;
const procs: (SluiceProcess | undefined)[] = [];

beforeAll(async () => {
  t = await openStore('c20');
});
afterEach(async () => killAll(procs.splice(0)));
afterAll(async () => t.close());

async function enqueue(queue: string, input: Omit<EnqueueInput, 'queue'>): Promise<string> {
  const [r] = await t.store.enqueue([normalizeEnqueue({ queue, ...input }, 524288)]);
  return r.id;
}

const completed = (queue: string, ids: string[], timeoutMs: number) =>
  waitUntil(`${ids.length} jobs completed`, async () => {
    const jobs = await Promise.all(ids.map((id) => t.store.getJob(queue, id)));
    return jobs.every((j) => j?.status === 'completed');
  }, timeoutMs);

test('C20: with the worker busy, priorities 5, 3, (none), 2 and 1 s later 10 start in the order 10, 5, 3, 2, 0', async () => {
  const q = 'c20a';
  const p = await startSluice({ REDIS_PREFIX: t.prefix, QUEUES: q, WORKER_CONCURRENCY: '1' });
  procs.push(p);
  await workerIdOf(p);
  const long = await enqueue(q, { type: 'diag.sleep', payload: { ms: 3000 } });
  await waitForEvent(t.redis, t.keys(q).events, (e) => e.e === 'claimed' && e.j === long, 'long job claimed');

  const byId = new Map<string, string>();
  for (const priority of [5, 3, undefined, 2]) {
    byId.set(await enqueue(q, { type: 'diag.sleep', payload: { ms: 20 }, priority }), String(priority ?? 0));
  }
  await sleep(1000);
  byId.set(await enqueue(q, { type: 'diag.sleep', payload: { ms: 20 }, priority: 10 }), '10');

  await completed(q, [long, ...byId.keys()], 15000);
  const ev = await events(t.redis, t.keys(q).events);
  // Everything was enqueued while the long job still ran.
  const longDone = ev.find((e) => e.e === 'completed' && e.j === long) as StreamEvent;
  for (const id of byId.keys()) expect(ev.find((e) => e.e === 'enqueued' && e.j === id)!.at).toBeLessThan(longDone.at);
  const order = ev.filter((e) => e.e === 'claimed' && e.j !== long).map((e) => byId.get(e.j));
  expect(order).toEqual(['10', '5', '3', '2', '0']);
}, 30000);

test('C20: of four equal-priority jobs, the first, requeued once after its lease expired, keeps its place', async () => {
  const q = 'c20b';
  // The reaper runs in the worker process (ROLE worker,scheduler), every 100 ms.
  const p = await startSluice({ REDIS_PREFIX: t.prefix, QUEUES: q, WORKER_CONCURRENCY: '1', ROLE: 'worker,scheduler', REAPER_INTERVAL_MS: '100' });
  procs.push(p);
  const workerId = await workerIdOf(p);
  const long = await enqueue(q, { type: 'diag.sleep', payload: { ms: 3000 } });
  const k = t.keys(q);
  await waitForEvent(t.redis, k.events, (e) => e.e === 'claimed' && e.j === long, 'long job claimed');

  const ids: string[] = [];
  for (const name of ['A', 'B', 'C', 'D']) ids.push(await enqueue(q, { type: 'diag.sleep', payload: { name, ms: 20 } }));
  // A worker that crashes holding A: it claims A (the head of the queue) and never acks.
  const crashed = await t.store.claim(q, 1, 300, 'crashed-worker');
  expect(crashed.jobs.map((j) => j.id)).toEqual([ids[0]]);
  const stalled = await waitForEvent(t.redis, k.events, (e) => e.e === 'stalled' && e.j === ids[0], 'A stalled', 5000);
  expect(stalled.r).toBe('lease_expired');

  await completed(q, [long, ...ids], 15000);
  const ev = await events(t.redis, k.events);
  const longDone = ev.find((e) => e.e === 'completed' && e.j === long) as StreamEvent;
  expect(stalled.at).toBeLessThan(longDone.at); // requeued while B, C, D were still waiting
  const starts = ev.filter((e) => e.e === 'claimed' && e.w === workerId && e.j !== long).map((e) => ['A', 'B', 'C', 'D'][ids.indexOf(e.j)]);
  expect(starts).toEqual(['A', 'B', 'C', 'D']);
  expect(await t.store.getJob(q, ids[0])).toMatchObject({ status: 'completed', attempts: 2 });
}, 30000);
