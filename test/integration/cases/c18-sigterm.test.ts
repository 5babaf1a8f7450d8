/**
 * C18 (CASES.md): SIGTERM during work.
 *
 * One real worker process, SHUTDOWN_GRACE_MS 5 s, the default 30 s lease (so
 * a job left to its lease would still be `active` long after the process
 * exits). Jobs `diag.sleep 3000` and `diag.sleep 60000` run; the worker gets
 * SIGTERM 1 s later and a third job is posted at 1.5 s. Expected: the 3 s job
 * completes; the 60 s job is released to `waiting` at ≈ 6 s (SIGTERM + grace)
 * with a `released` event and its attempt refunded; the stopping worker takes
 * no new job; the process exits 0; nothing is left `active`.
 *
 * Then, so that every job ends with exactly one terminal event, the released
 * job is cancelled and a second worker runs the third job.
 */
import { killAll, SluiceProcess } from '../../support/process';
import { openStore, sleep, TestStore } from '../../support/redis';
import {
  auditEvents,
  enqueue,
  expectOneTerminalEventPerJob,
  startOnPrefix,
  waitForEvent,
  waitUntil,
  within,
  workerIdOf,
} from '../../support/cases';

const Q = 'c18';
const GRACE_MS = 5000;
/** Scheduling slack on a loaded 2-core machine. */
const SLACK_MS = 1500;
const ENV = {
  ROLE: 'worker',
  QUEUES: Q,
  SHUTDOWN_GRACE_MS: String(GRACE_MS),
  LOCK_TTL_MS: '30000',
};

let t: TestStore;
const procs: SluiceProcess[] = [];

beforeAll(async () => {
  t = await openStore('c18');
});
afterAll(async () => {
  await killAll(procs);
  await t.close();
});

test('C18 SIGTERM during work: short job completes, long job released with its attempt refunded, exit 0', async () => {
  const w = await startOnPrefix(t, ENV);
  procs.push(w);
  const wid = await workerIdOf(w);

  const [shortId, longId] = await enqueue(t, [
    { queue: Q, type: 'diag.sleep', payload: { ms: 3000 } },
    { queue: Q, type: 'diag.sleep', payload: { ms: 60_000 } },
  ]);
  const claims = await Promise.all(
    [shortId, longId].map((id) =>
      waitForEvent(t, Q, id, (e) => e.e === 'claimed', 10_000, 'claim'),
    ),
  );
  expect(claims.map((c) => c.w)).toEqual([wid, wid]);
  const t0 = Math.max(...claims.map((c) => c.at));

  await sleep(Math.max(0, t0 + 1000 - Date.now()));
  w.kill('SIGTERM');
  const sigtermAt = Date.now();
  await sleep(Math.max(0, t0 + 1500 - Date.now()));
  const [thirdId] = await enqueue(t, [{ queue: Q, type: 'diag.sleep', payload: { ms: 100 } }]);

  const exit = await within(w.exited, GRACE_MS + 10_000, 'still running');
  const exitedAt = Date.now();
  expect(exit).toEqual({ code: 0, signal: null });
  expect(exitedAt - sigtermAt).toBeLessThan(GRACE_MS + SLACK_MS + 1000);

  // The 3 s job completed during the grace period.
  const shortEv = await auditEvents(t, Q, shortId);
  expect(shortEv.map((e) => e.e)).toEqual(['enqueued', 'claimed', 'completed']);
  expect(shortEv[2]).toMatchObject({ w: wid, a: 1 });
  expect(shortEv[2].at - shortEv[1].at).toBeGreaterThanOrEqual(3000);
  expect(shortEv[2].at).toBeLessThan(sigtermAt + GRACE_MS);

  // The 60 s job was released when the grace ran out (≈ 6 s), attempt refunded.
  const longEv = await auditEvents(t, Q, longId);
  expect(longEv.map((e) => e.e)).toEqual(['enqueued', 'claimed', 'released']);
  const released = longEv[2];
  expect(released).toMatchObject({ f: 'active', t: 'waiting', w: wid, a: 1, r: 'shutdown' });
  expect(released.at).toBeGreaterThanOrEqual(sigtermAt + GRACE_MS - 50); // not before the grace ran out
  expect(released.at - (sigtermAt + GRACE_MS)).toBeLessThanOrEqual(SLACK_MS); // nor left to its 30 s lease
  expect(released.at - t0).toBeGreaterThanOrEqual(6000 - 100);
  const long = await t.store.getJob(Q, longId);
  expect(long).toMatchObject({ status: 'waiting', attempts: 0, executionSeq: 1 });
  expect(await t.redis.zscore(t.keys(Q).waiting, longId)).not.toBeNull();

  // The stopping worker took no new job.
  expect((await auditEvents(t, Q, thirdId)).map((e) => e.e)).toEqual(['enqueued']);
  expect(await t.store.getJob(Q, thirdId)).toMatchObject({ status: 'waiting', attempts: 0 });

  // Nothing left active.
  expect(await t.redis.zcard(t.keys(Q).active)).toBe(0);
  const statuses = await Promise.all(
    [shortId, longId, thirdId].map(async (id) => (await t.store.getJob(Q, id))?.status),
  );
  expect(statuses).toEqual(['completed', 'waiting', 'waiting']);

  // Finish the story: cancel the released job, let a new worker run the third.
  expect(await t.store.cancel(Q, longId)).toBe('cancelled');
  const w2 = await startOnPrefix(t, ENV);
  procs.push(w2);
  await waitUntil(
    'the third job to complete',
    async () => (await t.store.getJob(Q, thirdId))?.status === 'completed',
    10_000,
  );
  expectOneTerminalEventPerJob(await auditEvents(t, Q), [shortId, longId, thirdId]);
}, 60_000);
