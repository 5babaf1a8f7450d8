/**
 * C7 (CASES.md): what maxAttempts means. `maxAttempts` is the total number of
 * executions including the first.
 *
 * - `diag.crash` with maxAttempts 2 kills its worker process on every run:
 *   a scheduler process reaps the expired lease, a supervisor (this test)
 *   restarts the worker. It must run exactly twice (two claims, two process
 *   exits) and end `failed` with attempts 2.
 * - `diag.fail` with maxAttempts 1 throws: it must run exactly once (no retry)
 *   and end `failed` with attempts 1 and the handler's error.
 */
import { killAll, SluiceProcess } from '../../support/process';
import { openStore, sleep, TestStore } from '../../support/redis';
import {
  auditEvents,
  enqueue,
  expectOneTerminalEventPerJob,
  startOnPrefix,
  Supervisor,
  waitUntil,
  workerIdOf,
} from '../../support/cases';

const LEASE_MS = 1000;
const REAPER_MS = 200;
const TIMINGS = {
  LOCK_TTL_MS: String(LEASE_MS),
  HEARTBEAT_INTERVAL_MS: '250',
  REAPER_INTERVAL_MS: String(REAPER_MS),
};

let t: TestStore;
const procs: SluiceProcess[] = [];
const supervisors: Supervisor[] = [];

beforeAll(async () => {
  t = await openStore('c07');
});
afterAll(async () => {
  await Promise.all(supervisors.map((s) => s.stop()));
  await killAll(procs);
  await t.close();
});

const finished = (queue: string, id: string) =>
  waitUntil(
    `job ${id} to finish`,
    async () => {
      const j = await t.store.getJob(queue, id);
      return j && ['completed', 'failed', 'cancelled'].includes(j.status) ? j : undefined;
    },
    20_000,
    100,
  );

test('C7 diag.crash with maxAttempts 2 runs exactly twice and ends failed with attempts 2', async () => {
  const Q = 'c7-crash';
  const env = { ...TIMINGS, QUEUES: Q };
  procs.push(await startOnPrefix(t, { ...env, ROLE: 'scheduler' }));
  const supervisor = new Supervisor((waitReady) =>
    startOnPrefix(t, { ...env, ROLE: 'worker' }, { waitReady }),
  );
  supervisors.push(supervisor);
  await supervisor.start();

  const [id] = await enqueue(t, [{ queue: Q, type: 'diag.crash', maxAttempts: 2 }]);
  const job = await finished(Q, id);
  // Leave time for a (wrong) third run: a lease and a reaper pass, plus a restart.
  await sleep(LEASE_MS + REAPER_MS + 1500);

  expect(job).toMatchObject({ status: 'failed', attempts: 2, maxAttempts: 2 });
  expect(job.lastError).toMatch(/lease expired/);
  const ev = await auditEvents(t, Q, id);
  // Every expired lease is a `stalled` event; on the last attempt `failed` follows.
  expect(ev.map((e) => e.e)).toEqual(['enqueued', 'claimed', 'stalled', 'claimed', 'stalled', 'failed']);
  expect(ev[4]).toMatchObject({ r: 'lease_expired', a: 2, t: 'active' });
  expect(ev.filter((e) => e.e === 'claimed').map((e) => e.a)).toEqual([1, 2]);
  expect(ev[4]).toMatchObject({ r: 'lease_expired', a: 2 });
  // Both runs really ran: each took its worker process down.
  expect(supervisor.exits).toHaveLength(2);
  for (const x of supervisor.exits) {
    expect(x.code).toBe(1);
    expect(x.output).toContain('diag.crash: exiting the worker process');
  }
  expect(await t.store.getJob(Q, id)).toMatchObject({ status: 'failed', attempts: 2 });
  expectOneTerminalEventPerJob(await auditEvents(t, Q), [id]);
}, 60_000);

test('C7 diag.fail with maxAttempts 1 runs exactly once and ends failed with attempts 1', async () => {
  const Q = 'c7-fail';
  const w = await startOnPrefix(t, { ...TIMINGS, QUEUES: Q, ROLE: 'worker,scheduler' });
  procs.push(w);
  const wid = await workerIdOf(w);

  const [id] = await enqueue(t, [
    {
      queue: Q,
      type: 'diag.fail',
      payload: { message: 'c7 boom' },
      maxAttempts: 1,
      backoff: { type: 'fixed', delayMs: 0, maxDelayMs: 0, jitter: 'none' },
    },
  ]);
  const job = await finished(Q, id);
  // A (wrong) retry would come at once (zero backoff): give it time to show.
  await sleep(1000);

  expect(job).toMatchObject({
    status: 'failed',
    attempts: 1,
    maxAttempts: 1,
    lastError: 'c7 boom',
  });
  const ev = await auditEvents(t, Q, id);
  expect(ev.map((e) => e.e)).toEqual(['enqueued', 'claimed', 'failed']);
  expect(ev[1]).toMatchObject({ w: wid, a: 1 });
  expect(ev[2]).toMatchObject({ w: wid, a: 1, r: 'error', er: 'c7 boom' });
  expect(await t.store.getJob(Q, id)).toMatchObject({ status: 'failed', attempts: 1 });
  expect(await t.redis.zscore(t.keys(Q).failed, id)).not.toBeNull();
  expectOneTerminalEventPerJob(await auditEvents(t, Q), [id]);
}, 60_000);
