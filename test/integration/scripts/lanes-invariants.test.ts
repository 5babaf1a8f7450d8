/**
 * Lane bookkeeping under a seeded random mix of every operation (enqueue with
 * and without keys and delays, claim, complete, fail, release, cancel,
 * expired leases, limit and override changes, aging on and off), on real
 * Redis. After every step: each slot count equals the active jobs of its key
 * (never lost, never counted twice), each waiting job sits in exactly its own
 * lane, and every lane with jobs can come back (ring, blocked or parked). At
 * the end, with the limits lifted, everything drains.
 */
import type { EnqueueInput, NormalizedEnqueue } from '../../../src/core/job-options';
import type { ClaimedJob } from '../../../src/core/job';
import { openStore, sleep, TestStore } from '../../support/redis';
import { scriptHelpers } from '../../support/scripts';
import { rng } from '../../support/rng';

let t: TestStore;
beforeAll(async () => {
  t = await openStore('lanesinv');
});
afterAll(async () => {
  await t.close();
});
const { newQueue, norm } = scriptHelpers(() => t, 'lanesinv');

type Held = ClaimedJob[];
const pickOf = (rand: () => number) => <T>(xs: T[]): T => xs[Math.floor(rand() * xs.length)];

/**
 * One random operation on q's jobs picked by x in [0, 0.92): enqueue (via
 * `enqueue`), claim, complete, fail, release, cancel, expire. Returns false
 * for x ≥ 0.92: the caller's own operations (limits, overrides, aging).
 */
async function jobStep(q: string, x: number, rand: () => number, held: Held, enqueue: () => Promise<unknown>): Promise<boolean> {
  const pick = pickOf(rand);
  if (x < 0.3) {
    await enqueue();
  } else if (x < 0.55) {
    const c = await t.store.claim(q, 1 + Math.floor(rand() * 5), rand() < 0.1 ? 20 : 30_000, 'w');
    held.push(...c.jobs);
  } else if (x < 0.7 && held.length) {
    const j = held.splice(Math.floor(rand() * held.length), 1)[0];
    await t.store.complete(q, 'w', [{ id: j.id, lockToken: j.lockToken, result: null }]);
  } else if (x < 0.78 && held.length) {
    const j = held.splice(Math.floor(rand() * held.length), 1)[0];
    await t.store.fail(q, j.id, j.lockToken, { error: 'e', retryable: rand() < 0.7, delayMs: rand() < 0.5 ? 0 : 20, reason: 'error', workerId: 'w' }).catch(() => undefined);
  } else if (x < 0.83 && held.length) {
    const j = held.splice(Math.floor(rand() * held.length), 1)[0];
    await t.store.release(q, 'w', [{ id: j.id, lockToken: j.lockToken }], { delayMs: rand() < 0.5 ? 0 : 20 });
  } else if (x < 0.88) {
    const ids = await t.redis.zrange(t.keys(q).waiting, 0, 20);
    const target = held.length && rand() < 0.5 ? held[Math.floor(rand() * held.length)].id : ids.length ? pick(ids) : null;
    if (target) await t.store.cancel(q, target).catch(() => undefined);
  } else if (x < 0.92) {
    await sleep(25);
    await t.store.reapExpired(q, 100);
    await t.store.promoteDelayed(q, 100);
  } else {
    return false;
  }
  return true;
}

/** Completes what is held, then claims and completes until q has no job left (20 s at most). */
async function drain(q: string, held: Held): Promise<void> {
  await t.store.complete(q, 'w', held.map((j) => ({ id: j.id, lockToken: j.lockToken, result: null })));
  const deadline = Date.now() + 20_000;
  for (;;) {
    await sleep(30);
    await t.store.reapExpired(q, 1000);
    await t.store.promoteDelayed(q, 1000);
    const c = await t.store.claim(q, 100, 30_000, 'w');
    if (c.jobs.length) await t.store.complete(q, 'w', c.jobs.map((j) => ({ id: j.id, lockToken: j.lockToken, result: null })));
    const k = t.keys(q);
    const left = (await t.redis.zcard(k.waiting)) + (await t.redis.zcard(k.delayed)) + (await t.redis.zcard(k.active));
    if (left === 0) break;
    if (Date.now() > deadline) throw new Error(`did not drain: ${left} jobs left`);
  }
}

async function checkInvariants(q: string): Promise<void> {
  const k = t.keys(q);
  const r = t.redis;
  const [waiting, active, kact, ring, kblk, kpark, meta] = await Promise.all([
    r.zrange(k.waiting, 0, -1),
    r.zrange(k.active, 0, -1),
    r.hgetall(k.base + 'kact'),
    r.zrange(k.base + 'ring', 0, -1),
    r.smembers(k.base + 'kblk'),
    r.zrange(k.base + 'kpark', 0, -1),
    r.hgetall(k.meta),
  ]);
  const fields = async (ids: string[]) => {
    const p = r.pipeline();
    for (const id of ids) p.hmget(k.base + 'job:' + id, 'ck', 's');
    return ((await p.exec()) ?? []).map(([, v]) => v as (string | null)[]);
  };
  // Slots = active jobs per key.
  const perKey: Record<string, string> = {};
  for (const [ck] of await fields(active)) if (ck) perKey[ck] = String(Number(perKey[ck] ?? 0) + 1);
  // Slots are counted once the queue has had a concurrency limit.
  expect(kact).toEqual(meta.kt === '1' ? perKey : {});
  // The counts index: waiting + active per key.
  const counts: Record<string, string> = { ...perKey };
  const kcnt = await r.zrange(k.base + 'kcnt', 0, -1, 'WITHSCORES');
  const kcntOf = () => Object.fromEntries(Array.from({ length: kcnt.length / 2 }, (_, i) => [kcnt[2 * i], String(-Number(kcnt[2 * i + 1]))]));
  const wf = await fields(waiting);
  if (meta.km === 't') {
    // Turns mode: the counts index is exact; each waiting job's score is its
    // priority's band plus a turn, no two jobs of one key share a turn, and
    // the key's last turn (kturn) is at least its jobs' turns.
    for (const [ck] of wf) if (ck) counts[ck] = String(Number(counts[ck] ?? 0) + 1);
    expect(kcntOf()).toEqual(counts);
    const ws = await r.zrange(k.waiting, 0, -1, 'WITHSCORES');
    const pr = await Promise.all(waiting.map((id) => r.hget(k.base + 'job:' + id, 'pr')));
    const kturn = await r.hgetall(k.base + 'kturn');
    const seen = new Set<string>();
    waiting.forEach((id, i) => {
      const score = BigInt(ws[2 * i + 1]);
      const band = score / 2n ** 44n;
      const turn = score % 2n ** 44n;
      expect([id, band]).toEqual([id, BigInt(100 - Number(pr[i] ?? 0))]);
      const key = wf[i][0] ?? '';
      expect(seen.has(`${key}/${turn}`)).toBe(false);
      seen.add(`${key}/${turn}`);
      expect([key, BigInt(kturn[key] ?? -1) >= turn]).toEqual([key, true]);
    });
    if (meta.kmig !== '1') expect(await r.keys(k.base + 'lane*')).toEqual([]);
    return;
  }
  if (meta.km !== '1') return;
  const laneOf = (ck: string | null) => (ck ? `${k.base}lane:${ck}` : `${k.base}lane`);
  // Every waiting job in its own lane.
  const p = r.pipeline();
  waiting.forEach((id, i) => p.zscore(laneOf(wf[i][0]), id));
  const scores = ((await p.exec()) ?? []).map(([, v]) => v);
  const missing = waiting.filter((_, i) => scores[i] === null);
  expect(missing).toEqual([]);
  // Lane entries that are not waiting are stale (claimed through the plain
  // path during a rebuild): allowed, a claim drops them when it meets them.
  // A lane with waiting jobs can come back: it is in the ring, blocked or parked.
  for (const [ck] of wf) if (ck) counts[ck] = String(Number(counts[ck] ?? 0) + 1);
  expect(kcntOf()).toEqual(counts);
  const keysWithJobs = new Set(wf.map(([ck]) => ck ?? ''));
  for (const ck of keysWithJobs) expect([ck, ring.includes(ck) || kblk.includes(ck) || kpark.includes(ck)]).toEqual([ck, true]);
}

it('slots, lanes and the ring stay consistent through 1,000 random operations, and everything drains', async () => {
  const q = newQueue();
  const rand = rng(20261203);
  const pick = pickOf(rand);
  const keys = ['k1', 'k2', 'k3', 'k4', undefined];
  const held: Held = [];
  const job = (key: string | undefined, input: Partial<EnqueueInput>): NormalizedEnqueue => ({ ...norm(q, input), ...(key ? { concurrencyKey: key } : {}) });
  const enqueue = () => {
    const n = 1 + Math.floor(rand() * 4);
    const delayed = rand() < 0.15;
    return t.store.enqueue(Array.from({ length: n }, () => job(pick(keys), { priority: Math.floor(rand() * 21) - 10, maxAttempts: 3, ...(delayed ? { delayMs: 30 } : {}) })));
  };
  await t.stores.queues.configure(q, { keyConcurrency: 2 });
  for (let step = 0; step < 1000; step++) {
    const x = rand();
    if (await jobStep(q, x, rand, held, enqueue)) {
      // done
    } else if (x < 0.95) {
      const key = pick(['k1', 'k2', 'k3', 'k4']);
      if (rand() < 0.5) await t.stores.queues.setKeyOverride(q, key, { concurrency: 1 + Math.floor(rand() * 4), rateLimit: rand() < 0.3 ? { max: 3, durationMs: 50 } : null });
      else await t.stores.queues.deleteKeyOverride(q, key);
    } else if (x < 0.98) {
      await t.stores.queues.configure(q, { keyConcurrency: 1 + Math.floor(rand() * 3), keyRateLimit: rand() < 0.3 ? { max: 4, durationMs: 40 } : null });
    } else {
      await t.stores.queues.configure(q, { agingMs: rand() < 0.5 ? null : 1000, fairness: rand() < 0.5 ? 'fifo' : 'round_robin' });
    }
    await checkInvariants(q);
  }
  // Drain: limits lifted, every lease handed back or expired; all jobs end.
  await t.stores.queues.configure(q, { keyConcurrency: null, keyRateLimit: null });
  for (const key of ['k1', 'k2', 'k3', 'k4']) await t.stores.queues.deleteKeyOverride(q, key);
  await drain(q, held);
  await checkInvariants(q);
  expect(await t.redis.hgetall(t.keys(q).base + 'kact')).toEqual({});
}, 120_000);

it('turns mode (round robin, no limits, one priority): counts, turns and the claim order stay consistent through 600 random operations, then a job of another priority moves the queue to lanes without losing a job', async () => {
  const q = newQueue();
  const rand = rng(20261204);
  const pick = pickOf(rand);
  const keys = ['k1', 'k2', 'k3', 'k4', undefined];
  const held: Held = [];
  const job = (key: string | undefined, input: Partial<EnqueueInput>): NormalizedEnqueue => ({ ...norm(q, input), ...(key ? { concurrencyKey: key } : {}) });
  const enqueue = () => {
    const n = 1 + Math.floor(rand() * 6);
    const delayed = rand() < 0.15;
    return t.store.enqueue(Array.from({ length: n }, () => job(pick(keys), { priority: 3, maxAttempts: 3, ...(delayed ? { delayMs: 30 } : {}) })));
  };
  const k = t.keys(q);
  await t.store.enqueue([job('k1', { priority: 3 })]);
  expect(await t.redis.hget(k.meta, 'km')).toBe('t');
  for (let step = 0; step < 600; step++) {
    // Scaled into jobStep's range: no limit, override or aging change here.
    await jobStep(q, rand() * 0.92, rand, held, enqueue);
    await checkInvariants(q);
    // Claims take the lowest turns: none left waiting is earlier than one claimed.
    if (step % 50 === 49) {
      const before = await t.redis.zrange(k.waiting, 0, -1, 'WITHSCORES');
      const turnOf = new Map(Array.from({ length: before.length / 2 }, (_, i) => [before[2 * i], BigInt(before[2 * i + 1])]));
      const c = await t.store.claim(q, 3, 30_000, 'w');
      held.push(...c.jobs);
      const claimed = c.jobs.map((j) => turnOf.get(j.id)!).filter((x) => x !== undefined);
      const left = [...turnOf.entries()].filter(([id]) => !c.jobs.some((j) => j.id === id)).map(([, x]) => x);
      if (claimed.length && left.length) expect(claimed.reduce((a, b) => (a > b ? a : b)) <= left.reduce((a, b) => (a < b ? a : b))).toBe(true);
      await checkInvariants(q);
    }
  }
  expect(await t.redis.hget(k.meta, 'km')).toBe('t');
  // Another priority: turns cannot order it inside its key; the move to lanes
  // starts (kmig) and the maintenance pass finishes it.
  await t.store.enqueue([job('k2', { priority: 9 })]);
  expect(await t.redis.hget(k.meta, 'kmig')).toBe('1');
  expect(await t.stores.queues.finishLaneMove(q)).toBe(true);
  expect(await t.redis.hmget(k.meta, 'km', 'kmig')).toEqual(['1', null]);
  expect(await t.stores.queues.finishLaneMove(q)).toBe(false);
  await checkInvariants(q);
  // Drain in lanes mode: every job ends; the counts index empties.
  await drain(q, held);
  await checkInvariants(q);
  expect(await t.redis.zcard(k.base + 'kcnt')).toBe(0);
}, 120_000);
