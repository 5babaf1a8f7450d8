import { normalizeEnqueue } from '../../../src/core/job-options';
import { killAll, SluiceProcess, startSluice } from '../../support/process';
import { openStore, sleep, TestStore } from '../../support/redis';
import { events, redisNow, waitUntil, workerIdOf } from '../../support/timing';

/**
 * C10 — Very long delays (CASES.md). 30 days and 2^31 ms (beyond a 32-bit
 * timer) must stay `delayed` with runAt = now + delay on Redis's clock, and
 * a running worker + scheduler must not start them early.
 */
const QUEUE = 'c10';
const DELAYS = [2_592_000_000, 2_147_483_648];

let t: TestStore;
let proc: SluiceProcess | undefined;

beforeAll(async () => {
  t = await openStore('c10');
});
afterAll(async () => {
  await killAll([proc]);
  await t.close();
});

test('C10: delays of 30 days and 2^31 ms stay delayed with runAt = now + delay and never run early', async () => {
  proc = await startSluice({ REDIS_PREFIX: t.prefix, QUEUES: QUEUE, ROLE: 'worker,scheduler', REAPER_INTERVAL_MS: '200' });
  await workerIdOf(proc);

  const before = await redisNow(t.redis);
  const res = await t.store.enqueue(DELAYS.map((delayMs) => normalizeEnqueue({ queue: QUEUE, type: 'diag.echo', payload: { delayMs }, delayMs }, 524288)));
  const after = await redisNow(t.redis);
  const ids = res.map((r) => r.id);
  expect(res.map((r) => r.status)).toEqual(['delayed', 'delayed']);

  const check = async () => {
    for (const [i, id] of ids.entries()) {
      const job = await t.store.getJob(QUEUE, id);
      expect(job).toMatchObject({ status: 'delayed', attempts: 0, startedAt: null });
      // runAt is the enqueue instant (Redis TIME, between our two readings) plus the delay, exactly.
      expect(job!.runAt - job!.createdAt).toBe(DELAYS[i]);
      expect(job!.createdAt).toBeGreaterThanOrEqual(before);
      expect(job!.createdAt).toBeLessThanOrEqual(after);
      expect(Number(await t.redis.zscore(t.keys(QUEUE).delayed, id))).toBe(job!.runAt);
    }
  };
  await check();

  // A control job proves the worker serves this queue while the long ones wait.
  const [control] = await t.store.enqueue([normalizeEnqueue({ queue: QUEUE, type: 'diag.echo', payload: { control: true } }, 524288)]);
  await waitUntil('control job completed', async () => (await t.store.getJob(QUEUE, control.id))?.status === 'completed', 10000);

  // Several promoter (1 s) and reaper passes, and idle claim loops.
  await sleep(3500);
  await check();
  for (const id of ids) {
    expect((await events(t.redis, t.keys(QUEUE).events, id)).map((e) => e.e)).toEqual(['enqueued']);
  }
  const ev = await events(t.redis, t.keys(QUEUE).events);
  expect(ev.filter((e) => e.e === 'claimed').map((e) => e.j)).toEqual([control.id]);
  expect(proc.proc.exitCode).toBeNull();
});
