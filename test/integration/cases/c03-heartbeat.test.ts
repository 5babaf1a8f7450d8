/**
 * C3 (CASES.md): a long job with heartbeats is never run twice.
 *
 * One real worker process that also runs the lease reaper
 * (ROLE=worker,scheduler): lease 2 s, heartbeat 500 ms, reaper 200 ms. A
 * `diag.sleep {ms: 10000}` job, five leases long, must run exactly once: the
 * test samples the job hash every 100 ms and requires `active` with attempt 1,
 * executionSeq 1 and a live lease from the claim until it completes.
 */
import { killAll, SluiceProcess } from '../../support/process';
import { openStore, TestStore } from '../../support/redis';
import {
  auditEvents,
  enqueue,
  expectOneTerminalEventPerJob,
  redisNow,
  startOnPrefix,
  waitForEvent,
} from '../../support/cases';

const Q = 'c3';
const LEASE_MS = 2000;
const SLEEP_MS = 10_000;

let t: TestStore;
const procs: SluiceProcess[] = [];

beforeAll(async () => {
  t = await openStore('c03');
});
afterAll(async () => {
  await killAll(procs);
  await t.close();
});

test('C3 long job with heartbeats is never run twice', async () => {
  const w = await startOnPrefix(t, {
    ROLE: 'worker,scheduler',
    QUEUES: Q,
    LOCK_TTL_MS: String(LEASE_MS),
    HEARTBEAT_INTERVAL_MS: '500',
    REAPER_INTERVAL_MS: '200',
  });
  procs.push(w);

  const [id] = await enqueue(t, [
    { queue: Q, type: 'diag.sleep', payload: { ms: SLEEP_MS }, maxAttempts: 3 },
  ]);
  const claimed = await waitForEvent(t, Q, id, (e) => e.e === 'claimed', 10_000, 'claim');
  const keys = t.keys(Q);
  const jobKey = keys.base + 'job:' + id;

  // Sample the job until it leaves `active`. The lease expiry is the job's
  // score in the queue's active set (renewed by each heartbeat).
  const samples: {
    now: number;
    s: string | null;
    a: string | null;
    x: string | null;
    le: string | null;
  }[] = [];
  const deadline = Date.now() + SLEEP_MS + 10_000;
  for (;;) {
    const [[s, a, x], le, now] = await Promise.all([
      t.redis.hmget(jobKey, 's', 'a', 'x'),
      t.redis.zscore(keys.active, id),
      redisNow(t.redis),
    ]);
    samples.push({ now, s, a, x, le });
    if (s !== 'active' || Date.now() > deadline) break;
    await new Promise((r) => setTimeout(r, 100));
  }

  const last = samples[samples.length - 1];
  expect(last.s).toBe('completed');
  const whileRunning = samples.slice(0, -1);
  expect(whileRunning.length).toBeGreaterThan(50);
  // Active throughout, on its first execution, under a lease that never lapsed.
  const bad = whileRunning.filter(
    (p) => p.s !== 'active' || p.a !== '1' || p.x !== '1' || !(Number(p.le) > p.now),
  );
  expect(bad).toEqual([]);
  // The lease was renewed: the last one seen ends well past the first lease.
  expect(Number(whileRunning[whileRunning.length - 1].le)).toBeGreaterThan(
    claimed.at + SLEEP_MS - 1000,
  );

  const job = await t.store.getJob(Q, id);
  expect(job).toMatchObject({
    status: 'completed',
    attempts: 1,
    executionSeq: 1,
    result: { sleptMs: SLEEP_MS },
  });

  const ev = await auditEvents(t, Q, id);
  expect(ev.map((e) => e.e)).toEqual(['enqueued', 'claimed', 'completed']);
  expect(ev[2].at - ev[1].at).toBeGreaterThanOrEqual(SLEEP_MS);
  expectOneTerminalEventPerJob(await auditEvents(t, Q), [id]);
}, 60_000);
