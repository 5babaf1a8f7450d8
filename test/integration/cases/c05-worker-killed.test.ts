/**
 * C5 (CASES.md): a worker killed mid-job.
 *
 * Real processes: a scheduler (lease reaper every 500 ms) and a worker, lease
 * 2 s, heartbeat 500 ms. A `diag.sleep {ms: 30000}` job with maxAttempts 3 is
 * claimed; 1 s later the worker gets SIGKILL and a new worker is started. The
 * job must go back to `waiting` within lease + reaper interval (a `stalled`
 * event, reason `lease_expired`, never before the lease ran out), then
 * complete on the new worker. Meanwhile the test reads the job atomically
 * every 50 ms: it never disappears, and never sits `active` without a live
 * lease (beyond one reaper pass).
 */
import type { Job } from '../../../src/core/job';
import { killAll, SluiceProcess } from '../../support/process';
import { openStore, sleep, TestStore } from '../../support/redis';
import {
  auditEvents,
  enqueue,
  expectOneTerminalEventPerJob,
  startOnPrefix,
  waitForEvent,
  waitUntil,
  workerIdOf,
} from '../../support/cases';

const Q = 'c5';
const LEASE_MS = 2000;
const REAPER_MS = 500;
const SLEEP_MS = 30_000;
/** Scheduling slack on a loaded 2-core machine (timers, process start). */
const SLACK_MS = 1000;
const ENV = {
  QUEUES: Q,
  LOCK_TTL_MS: String(LEASE_MS),
  HEARTBEAT_INTERVAL_MS: '500',
  REAPER_INTERVAL_MS: String(REAPER_MS),
};

let t: TestStore;
const procs: SluiceProcess[] = [];

beforeAll(async () => {
  t = await openStore('c05');
});
afterAll(async () => {
  await killAll(procs);
  await t.close();
});

/**
 * Reads a job's status, attempts, lease (its score in the active set) and
 * whether it sits in the waiting set, in one MULTI every 50 ms, until the job
 * is terminal or stop() is called.
 */
function watchJob(
  t: TestStore,
  queue: string,
  id: string,
): { samples: Sample[]; stop(): Promise<void> } {
  const keys = t.keys(queue);
  const jobKey = keys.base + 'job:' + id;
  const samples: Sample[] = [];
  const sampleOnce = async (): Promise<Sample> => {
    const res = (await t.redis
      .multi()
      .hmget(jobKey, 's', 'a')
      .zscore(keys.active, id)
      .zscore(keys.waiting, id)
      .time()
      .exec())!;
    const [s, a] = res[0][1] as (string | null)[];
    const lease = res[1][1] as string | null;
    const [sec, us] = res[3][1] as [string, string];
    const sample = {
      now: Number(sec) * 1000 + Math.floor(Number(us) / 1000),
      s,
      a,
      lease: lease === null ? null : Number(lease),
      inWaiting: res[2][1] !== null,
    };
    samples.push(sample);
    return sample;
  };
  const terminal = (p: Sample) => p.s === 'completed' || p.s === 'failed' || p.s === 'cancelled';
  let watching = true;
  const loop = (async () => {
    while (watching && !terminal(await sampleOnce())) await sleep(50);
  })();
  return {
    samples,
    stop: async () => {
      watching = false;
      await loop.catch(() => undefined);
      // One last look, so the job's final state is among the samples.
      if (!samples.length || !terminal(samples[samples.length - 1]))
        await sampleOnce().catch(() => undefined);
    },
  };
}

interface Sample {
  now: number;
  s: string | null;
  a: string | null;
  /** Lease expiry: the job's score in the active set. */
  lease: number | null;
  inWaiting: boolean;
}

test('C5 worker killed mid-job: lease expires, job is stalled back to waiting, then completes', async () => {
  const [scheduler, w1] = await Promise.all([
    startOnPrefix(t, { ...ENV, ROLE: 'scheduler' }),
    startOnPrefix(t, { ...ENV, ROLE: 'worker' }),
  ]);
  procs.push(scheduler, w1);
  const id1 = await workerIdOf(w1);

  const [id] = await enqueue(t, [
    { queue: Q, type: 'diag.sleep', payload: { ms: SLEEP_MS }, maxAttempts: 3 },
  ]);
  const claim1 = await waitForEvent(t, Q, id, (e) => e.e === 'claimed', 10_000, 'first claim');
  expect(claim1.w).toBe(id1);

  // Watch the job from now until it completes, each read one MULTI (atomic).
  const keys = t.keys(Q);
  const watch = watchJob(t, Q, id);
  let done: Job | null;
  let id2: string;
  try {
    await sleep(Math.max(0, claim1.at + 1000 - Date.now()));
    w1.kill('SIGKILL');
    const killedAt = Date.now();
    expect(await w1.exited).toEqual({ code: null, signal: 'SIGKILL' });
    // Nobody renews the lease any more: the last expiry written by w1 stands.
    // Read before w2 starts: on a loaded machine w2 may claim the job (a new
    // lease) before a later read.
    const leaseAtKill = Number(await t.redis.zscore(keys.active, id));
    const w2 = await startOnPrefix(t, { ...ENV, ROLE: 'worker' });
    procs.push(w2);
    id2 = await workerIdOf(w2);
    const stalled = await waitForEvent(
      t,
      Q,
      id,
      (e) => e.e !== 'enqueued' && e.e !== 'claimed',
      LEASE_MS + REAPER_MS + 10_000,
      'stall',
    );
    expect(stalled).toMatchObject({
      e: 'stalled',
      f: 'active',
      t: 'waiting',
      r: 'lease_expired',
      a: 1,
    });
    expect(stalled.at).toBeGreaterThanOrEqual(leaseAtKill);
    expect(stalled.at - leaseAtKill).toBeLessThanOrEqual(REAPER_MS + SLACK_MS);
    expect(stalled.at - killedAt).toBeLessThanOrEqual(LEASE_MS + REAPER_MS + SLACK_MS);

    done = await waitUntil(
      'completion on the new worker',
      async () => {
        const j = await t.store.getJob(Q, id);
        return j && (j.status === 'completed' || j.status === 'failed' || j.status === 'cancelled')
          ? j
          : undefined;
      },
      SLEEP_MS + 15_000,
      200,
    );
  } finally {
    await watch.stop();
  }
  const samples = watch.samples;

  expect(done).toMatchObject({
    status: 'completed',
    attempts: 2,
    executionSeq: 2,
    workerId: id2,
    result: { sleptMs: SLEEP_MS },
  });

  // Never gone, never in two places, never active past its lease (+ one reaper pass).
  const problems = samples.filter(
    (p) =>
      !(p.s === 'waiting' && p.inWaiting && p.lease === null) &&
      !(
        p.s === 'active' &&
        !p.inWaiting &&
        p.lease !== null &&
        p.now - p.lease <= REAPER_MS + SLACK_MS
      ) &&
      !(p.s === 'completed' && !p.inWaiting && p.lease === null),
  );
  expect(problems).toEqual([]);
  expect(samples[samples.length - 1].s).toBe('completed');

  const ev = await auditEvents(t, Q, id);
  expect(ev.map((e) => e.e)).toEqual(['enqueued', 'claimed', 'stalled', 'claimed', 'completed']);
  expect(ev[3]).toMatchObject({ w: id2, a: 2 });
  expect(ev[4]).toMatchObject({ w: id2, a: 2 });
  expectOneTerminalEventPerJob(await auditEvents(t, Q), [id]);
}, 90_000);
