/**
 * C1 (CASES.md): a stale worker acks after losing its lease.
 *
 * Two real worker processes, lease 1 s. Worker A runs
 * `diag.block {ms: 3000, times: 1}`, a busy loop that starves its event loop,
 * so it sends no heartbeat and its lease expires. Worker B (which also runs
 * the reaper, ROLE=worker,scheduler) sees the lease expire, the job goes back
 * to waiting (`stalled`), B reruns it (attempt 2 does not block) and completes
 * it. When A's loop ends, its late complete must be refused (`lease_lost`) and
 * its result discarded: one `completed` event, from B.
 *
 * Why the rerun must not block: a rerun that outlives its lease as well would
 * be reaped in turn (by B's own reaper as soon as B's loop is free: its next
 * step can reach Redis before B's complete), which is the reaper doing its
 * job, not what this case is about. A must claim first: B serves a second
 * queue and is kept busy there (concurrency 1) while the job is enqueued.
 */
import { killAll, SluiceProcess } from '../../support/process';
import { openStore, TestStore } from '../../support/redis';
import {
  auditEvents,
  enqueue,
  expectOneTerminalEventPerJob,
  startOnPrefix,
  waitForEvent,
  waitUntil,
  workerIdOf,
} from '../../support/cases';

const Q = 'c1';
const BUSY = 'c1-busy';
const LEASE_MS = 1000;
const BLOCK_MS = 3000;
const TIMINGS = {
  LOCK_TTL_MS: String(LEASE_MS),
  HEARTBEAT_INTERVAL_MS: '250',
  REAPER_INTERVAL_MS: '100',
};

let t: TestStore;
const procs: SluiceProcess[] = [];

beforeAll(async () => {
  t = await openStore('c01');
});
afterAll(async () => {
  await killAll(procs);
  await t.close();
});

test('C1 stale worker ack after losing its lease is refused', async () => {
  const [a, b] = await Promise.all([
    startOnPrefix(t, { ...TIMINGS, ROLE: 'worker', QUEUES: Q, WORKER_CONCURRENCY: '1' }),
    startOnPrefix(t, {
      ...TIMINGS,
      ROLE: 'worker,scheduler',
      QUEUES: `${BUSY},${Q}`,
      WORKER_CONCURRENCY: '1',
    }),
  ]);
  procs.push(a, b);
  const [idA, idB] = await Promise.all([workerIdOf(a), workerIdOf(b)]);

  // Keep B's only slot busy so that A claims the block job.
  const [busyId] = await enqueue(t, [{ queue: BUSY, type: 'diag.sleep', payload: { ms: 1500 } }]);
  await waitForEvent(
    t,
    BUSY,
    busyId,
    (e) => e.e === 'claimed' && e.w === idB,
    10_000,
    'B claiming the busy job',
  );

  const [id] = await enqueue(t, [
    { queue: Q, type: 'diag.block', payload: { ms: BLOCK_MS, times: 1 }, maxAttempts: 3 },
  ]);
  const firstClaim = await waitForEvent(t, Q, id, (e) => e.e === 'claimed', 10_000, 'first claim');
  expect(firstClaim.w).toBe(idA);

  const done = await waitUntil(
    'the job to complete',
    async () => {
      const j = await t.store.getJob(Q, id);
      return j && j.status !== 'active' && j.status !== 'waiting' ? j : undefined;
    },
    20_000,
  );
  expect(done.status).toBe('completed');
  expect(done.attempts).toBe(2);
  expect(done.workerId).toBe(idB);
  expect(done.result).toEqual({ blockedMs: 0 }); // B's result, not A's

  const ev = await auditEvents(t, Q, id);
  expect(ev.map((e) => e.e)).toEqual(['enqueued', 'claimed', 'stalled', 'claimed', 'completed']);
  const [, claimA, stalled, claimB, completed] = ev;
  expect(claimA).toMatchObject({ w: idA, a: 1 });
  expect(stalled).toMatchObject({ r: 'lease_expired', a: 1 });
  // The lease was honoured: not reaped before it expired.
  expect(stalled.at).toBeGreaterThanOrEqual(claimA.at + LEASE_MS);
  expect(claimB).toMatchObject({ w: idB, a: 2 });
  expect(completed).toMatchObject({ w: idB, a: 2 });
  // A's refused ack wrote nothing: no event of A after it lost the lease.
  expect(ev.filter((e) => e.w === idA && e.at > stalled.at)).toEqual([]);
  expect(ev.filter((e) => e.e === 'completed')).toHaveLength(1);
  // A's late complete reached Redis and was refused with lease_lost (A logs it).
  await a.waitFor(
    new RegExp(`"jobId":"${id}"[^\\n]*"status":"lease_lost"[^\\n]*late ack refused`),
    10_000,
  );

  expectOneTerminalEventPerJob(await auditEvents(t, Q), [id]);
  expectOneTerminalEventPerJob(await auditEvents(t, BUSY), [busyId]);
}, 60_000);
