/**
 * Flow control per key (lua/includes/lanes.lua) through the stores, on real
 * Redis: round-robin fairness, keyConcurrency slots on every way out of
 * active, overrides, sliding-window keyRateLimit, rate + concurrency on one
 * key, aging, and the lanes rebuild when settings change.
 */
import { openStore, sleep, TestStore } from '../../support/redis';
import { laneHelpers } from '../../support/lanes';

let t: TestStore;
beforeAll(async () => {
  t = await openStore('lanes');
});
afterAll(async () => {
  await t.close();
});

const { newQueue, raw, enqKeyed, keyOf, claim } = laneHelpers(() => t, 'lanes');
const configure = (q: string, change: Parameters<TestStore['stores']['queues']['configure']>[1]) => t.stores.queues.configure(q, change);

describe('fair shares', () => {
  it('round robin: 10 jobs of key B enqueued behind 2,000 of key A are all claimed within the first 20 claims', async () => {
    const q = newQueue();
    await enqKeyed(q, 'A', 2000);
    const b = new Set(await enqKeyed(q, 'B', 10));
    const order: string[] = [];
    for (let i = 0; i < 20; i++) {
      const c = await claim(q, 1);
      order.push(c.jobs[0].id);
    }
    expect(order.filter((id) => b.has(id))).toHaveLength(10);
    expect((await t.stores.queues.settings(q))?.fairness).toBe('round_robin');
    // A's jobs keep their own order (FIFO within the key).
    const aSeq = await Promise.all(order.filter((id) => !b.has(id)).map(async (id) => Number((await raw(q, id)).sq)));
    expect(aSeq).toEqual([...aSeq].sort((x, y) => x - y));
  });

  it('a batch claim rotates over keys: one job per key per turn', async () => {
    const q = newQueue();
    await enqKeyed(q, 'A', 50);
    await enqKeyed(q, 'B', 50);
    await enqKeyed(q, 'C', 50);
    const c = await claim(q, 9);
    const keys = await Promise.all(c.jobs.map((j) => keyOf(q, j.id)));
    expect(keys.slice(0, 3).sort()).toEqual(['A', 'B', 'C']);
    expect(keys.filter((k) => k === 'A')).toHaveLength(3);
    expect(keys.filter((k) => k === 'B')).toHaveLength(3);
  });

  it('unkeyed jobs enqueued before the first keyed one form a lane of their own and are not lost', async () => {
    const q = newQueue();
    const plain = await enqKeyed(q, undefined, 30);
    await enqKeyed(q, 'A', 30);
    // Each job is in exactly one lane: its key's, or the unkeyed one.
    const base = t.keys(q).base;
    expect(await t.redis.zcard(base + 'lane')).toBe(30);
    expect(await t.redis.zcard(base + 'lane:A')).toBe(30);
    const c = await claim(q, 4);
    const keys = await Promise.all(c.jobs.map((j) => keyOf(q, j.id)));
    expect(keys.sort()).toEqual(['', '', 'A', 'A']);
    let total = c.jobs.length;
    for (;;) {
      const more = await claim(q, 50);
      if (!more.jobs.length) break;
      total += more.jobs.length;
    }
    expect(total).toBe(60);
    expect(plain).toHaveLength(30);
    expect(await t.redis.zcard(t.keys(q).waiting)).toBe(0);
  });

  it('priority orders jobs inside a key; fifo fairness takes the best job of any key', async () => {
    const q = newQueue();
    await configure(q, { fairness: 'fifo' });
    await enqKeyed(q, 'A', 3, { priority: 0 });
    const [hiB] = await enqKeyed(q, 'B', 1, { priority: 50 });
    const [hiA] = await enqKeyed(q, 'A', 1, { priority: 60 });
    const c = await claim(q, 2);
    expect(c.jobs.map((j) => j.id)).toEqual([hiA, hiB]);
  });
});

describe('turns mode (round robin, no limits, one priority: no lanes)', () => {
  it('a key that arrives after claims began takes the next turns, not the tail of the backlog; the claim path is the plain one', async () => {
    const q = newQueue();
    const k = t.keys(q);
    await enqKeyed(q, 'A', 1000);
    expect(await t.redis.hget(k.meta, 'km')).toBe('t');
    for (let i = 0; i < 10; i++) await claim(q, 50);
    const b = new Set(await enqKeyed(q, 'B', 10));
    expect(await t.redis.keys(k.base + 'lane*')).toEqual([]);
    const order = (await claim(q, 20)).jobs.map((j) => j.id);
    expect(order.filter((id) => b.has(id))).toHaveLength(10);
    // Drained, a key that comes back starts from the last turn served: behind nobody, ahead of nobody.
    for (;;) if (!(await claim(q, 500)).jobs.length) break;
    const kv = Number(await t.redis.hget(k.meta, 'kv'));
    expect(kv).toBeGreaterThanOrEqual(500);
    const [c] = await enqKeyed(q, 'C', 1);
    expect(BigInt(await t.redis.zscore(k.waiting, c) as string) % 2n ** 44n).toBe(BigInt(kv));
  });

  it('a job of another priority moves the queue to lanes: then priority orders jobs inside a key while the other key keeps its turns', async () => {
    const q = newQueue();
    const k = t.keys(q);
    await enqKeyed(q, 'A', 30);
    await enqKeyed(q, 'B', 30);
    const [hiA] = await enqKeyed(q, 'A', 1, { priority: 60 });
    expect(await t.redis.hget(k.meta, 'kmig')).toBe('1');
    expect(await t.stores.queues.finishLaneMove(q)).toBe(true);
    expect(await t.redis.hget(k.meta, 'km')).toBe('1');
    const c = await claim(q, 4);
    const keys = await Promise.all(c.jobs.map((j) => keyOf(q, j.id)));
    expect(keys.sort()).toEqual(['A', 'A', 'B', 'B']);
    expect(c.jobs[0].id === hiA || c.jobs[1].id === hiA).toBe(true);
    let total = c.jobs.length;
    for (;;) {
      const more = await claim(q, 50);
      if (!more.jobs.length) break;
      total += more.jobs.length;
    }
    expect(total).toBe(61);
  });

  it('a keyConcurrency set on a turns-mode queue holds from the next claim (its jobs move into lanes), and an override does the same', async () => {
    const q = newQueue();
    const k = t.keys(q);
    await enqKeyed(q, 'A', 20);
    await enqKeyed(q, 'B', 20);
    expect(await t.redis.hget(k.meta, 'km')).toBe('t');
    await configure(q, { keyConcurrency: 2 });
    expect(await t.redis.hget(k.meta, 'km')).toBe('1');
    const keys = await Promise.all((await claim(q, 10)).jobs.map((j) => keyOf(q, j.id)));
    expect(keys.sort()).toEqual(['A', 'A', 'B', 'B']);

    const q2 = newQueue();
    await enqKeyed(q2, 'A', 20);
    expect(await t.redis.hget(t.keys(q2).meta, 'km')).toBe('t');
    await t.stores.queues.setKeyOverride(q2, 'A', { concurrency: 1 });
    expect(await t.redis.hget(t.keys(q2).meta, 'km')).toBe('1');
    expect((await claim(q2, 10)).jobs).toHaveLength(1);
  });

  it('GET keys counts in turns mode: waiting and active per key, from the counts index and the active set', async () => {
    const q = newQueue();
    await enqKeyed(q, 'A', 5);
    await enqKeyed(q, 'B', 2);
    await claim(q, 3);
    const top = await t.stores.queues.keys(q, 10);
    expect(top.map((e) => [e.key, e.waiting + e.active])).toEqual([['A', 5], ['B', 2]]);
    expect(top.reduce((a, e) => a + e.active, 0)).toBe(3);
    const a = await t.stores.queues.keyCounts(q, 'A');
    expect(a).toEqual({ waiting: top[0].waiting, active: top[0].active });
    expect(await t.stores.queues.keyCounts(q, 'nobody')).toEqual({ waiting: 0, active: 0 });
  });
});

describe('keyConcurrency: slots', () => {
  it('never more than the limit active per key; other keys run meanwhile; every way out of active gives the slot back', async () => {
    const q = newQueue();
    await configure(q, { keyConcurrency: 2 });
    await enqKeyed(q, 'A', 12, { maxAttempts: 5, backoff: { type: 'fixed', delayMs: 0, maxDelayMs: 0, jitter: 'none' } });
    await enqKeyed(q, 'B', 3);
    const first = await claim(q, 10);
    const keys = await Promise.all(first.jobs.map((j) => keyOf(q, j.id)));
    expect(keys.filter((k) => k === 'A')).toHaveLength(2);
    expect(keys.filter((k) => k === 'B')).toHaveLength(2);
    const held = first.jobs.filter((_, i) => keys[i] === 'A');
    expect((await claim(q, 5)).jobs).toHaveLength(0);

    // complete
    await t.store.complete(q, 'w1', [{ id: held[0].id, lockToken: held[0].lockToken, result: null }]);
    const c1 = await claim(q, 5);
    expect(c1.jobs).toHaveLength(1);
    // fail (retried at once)
    await t.store.fail(q, c1.jobs[0].id, c1.jobs[0].lockToken, { error: 'x', retryable: true, delayMs: 0, reason: 'error', workerId: 'w1' });
    const c2 = await claim(q, 5);
    expect(c2.jobs).toHaveLength(1);
    // release
    await t.store.release(q, 'w1', [{ id: c2.jobs[0].id, lockToken: c2.jobs[0].lockToken }]);
    const c3 = await claim(q, 5);
    expect(c3.jobs).toHaveLength(1);
    // cancel while active: ends cancelled when its holder acks
    await t.store.cancel(q, c3.jobs[0].id);
    expect(await t.store.complete(q, 'w1', [{ id: c3.jobs[0].id, lockToken: c3.jobs[0].lockToken, result: null }])).toEqual(['cancelled']);
    const c4 = await claim(q, 5, 100);
    expect(c4.jobs).toHaveLength(1);
    expect(await t.redis.hget(`${t.keys(q).base}kact`, 'A')).toBe('2');
    // timeout / crash: the lease expires and the reaper takes it
    await sleep(150);
    await t.store.reapExpired(q, 100);
    const c5 = await claim(q, 5);
    expect(c5.jobs).toHaveLength(1);
    expect(await t.redis.hget(`${t.keys(q).base}kact`, 'A')).toBe('2');
    // Slots match the active set exactly.
    const active = await t.redis.zrange(t.keys(q).active, 0, -1);
    const activeA = (await Promise.all(active.map((id) => keyOf(q, id)))).filter((k) => k === 'A');
    expect(activeA).toHaveLength(2);
  });

  it('an override of 5 for one key while the queue says 1; removing it goes back to 1', async () => {
    const q = newQueue();
    await configure(q, { keyConcurrency: 1 });
    await enqKeyed(q, 'vip', 10);
    await enqKeyed(q, 'std', 10);
    await t.stores.queues.setKeyOverride(q, 'vip', { concurrency: 5 });
    const c = await claim(q, 20);
    const keys = await Promise.all(c.jobs.map((j) => keyOf(q, j.id)));
    expect(keys.filter((k) => k === 'vip')).toHaveLength(5);
    expect(keys.filter((k) => k === 'std')).toHaveLength(1);
    const stats = await t.stores.queues.keys(q, 10);
    expect(stats.find((s) => s.key === 'vip')).toEqual({ key: 'vip', waiting: 5, active: 5, overrides: { concurrency: 5, rateLimit: null } });
    // One key's counts read directly (the key routes' answer): the same, and zeros for a key with no jobs.
    expect(await t.stores.queues.keyCounts(q, 'vip')).toEqual({ waiting: 5, active: 5 });
    expect(await t.stores.queues.keyCounts(q, 'std')).toEqual({ waiting: 9, active: 1 });
    expect(await t.stores.queues.keyCounts(q, 'nobody')).toEqual({ waiting: 0, active: 0 });
    expect(await t.stores.queues.deleteKeyOverride(q, 'vip')).toBe(true);
    await t.store.complete(q, 'w1', c.jobs.filter((_, i) => keys[i] === 'vip').map((j) => ({ id: j.id, lockToken: j.lockToken, result: null })));
    const again = await claim(q, 20);
    expect((await Promise.all(again.jobs.map((j) => keyOf(q, j.id)))).filter((k) => k === 'vip')).toHaveLength(1);
  });

  it('concurrent override changes of different fields both land (merged in one script step)', async () => {
    const q = newQueue();
    await configure(q, { keyConcurrency: 1 });
    for (let round = 0; round < 10; round++) {
      const key = `K${round}`;
      await Promise.all([
        t.stores.queues.setKeyOverride(q, key, { concurrency: 3 + round }),
        t.stores.queues.setKeyOverride(q, key, { rateLimit: { max: 5, durationMs: 1000 + round } }),
      ]);
      const [stored] = (await t.stores.queues.keys(q, 100)).filter((e) => e.key === key);
      expect(stored.overrides).toEqual({ concurrency: 3 + round, rateLimit: { max: 5, durationMs: 1000 + round } });
    }
    // Clearing one field keeps the other; clearing the last removes the override.
    expect(await t.stores.queues.setKeyOverride(q, 'K0', { concurrency: null })).toEqual({ concurrency: null, rateLimit: { max: 5, durationMs: 1000 } });
    expect(await t.stores.queues.setKeyOverride(q, 'K0', { rateLimit: null })).toEqual({ concurrency: null, rateLimit: null });
    expect(await t.redis.hexists(t.keys(q).keyOverrides, 'K0')).toBe(0);
    expect(await t.stores.queues.deleteKeyOverride(q, 'K1')).toBe(true);
    expect(await t.stores.queues.deleteKeyOverride(q, 'K1')).toBe(false);
  });

  it('raising keyConcurrency frees blocked keys at once', async () => {
    const q = newQueue();
    await configure(q, { keyConcurrency: 1 });
    await enqKeyed(q, 'A', 5);
    expect((await claim(q, 5)).jobs).toHaveLength(1);
    expect((await claim(q, 5)).jobs).toHaveLength(0);
    await configure(q, { keyConcurrency: 3 });
    expect((await claim(q, 5)).jobs).toHaveLength(2);
  });
});

describe('keyRateLimit: sliding window', () => {
  it('never more than max starts of a key in any window of durationMs; another key is unaffected; rate and concurrency together do not deadlock', async () => {
    const q = newQueue();
    await configure(q, { keyRateLimit: { max: 3, durationMs: 400 }, keyConcurrency: 2 });
    await enqKeyed(q, 'A', 12);
    await enqKeyed(q, 'B', 12);
    await t.stores.queues.setKeyOverride(q, 'B', { rateLimit: { max: 1000, durationMs: 1000 }, concurrency: 100 });
    const starts: Record<string, number[]> = { A: [], B: [] };
    const deadline = Date.now() + 8000;
    while (starts.A.length < 12 && Date.now() < deadline) {
      const c = await claim(q, 4);
      for (const j of c.jobs) {
        starts[(await keyOf(q, j.id)) as 'A' | 'B'].push(j.startedAt!);
        // Each job runs ~50 ms, so concurrency 2 and the rate limit bind in turn.
        setTimeout(() => void t.store.complete(q, 'w1', [{ id: j.id, lockToken: j.lockToken, result: null }]), 50);
      }
      await sleep(c.jobs.length ? 5 : 20);
    }
    expect(starts.A).toHaveLength(12);
    expect(starts.B).toHaveLength(12);
    const a = starts.A.sort((x, y) => x - y);
    for (let i = 3; i < a.length; i++) expect(a[i] - a[i - 3]).toBeGreaterThanOrEqual(400);
    // B (its own override) was not held to A's pace: all 12 started before A's 5th.
    expect(Math.max(...starts.B)).toBeLessThan(a[4]);
  });
});

describe('aging', () => {
  it('a priority -100 job among a stream of priority 100 jobs starts within 200 x agingMs', async () => {
    const q = newQueue();
    await configure(q, { agingMs: 1000 });
    // A test-only aging step of 5 ms written into the queue's meta (the API's
    // bound is 1,000 ms, which would make this a 200-second test).
    await t.redis.hset(t.keys(q).meta, 'ag', 5);
    await enqKeyed(q, undefined, 5, { priority: 100 });
    const [low] = await enqKeyed(q, undefined, 1, { priority: -100 });
    const lowAt = Number((await raw(q, low)).ca);
    // A steady stream: one priority-100 job in, one job out, per round.
    let startedAt = -1;
    const passed: number[] = [];
    while (startedAt < 0 && Date.now() - lowAt < 5000) {
      await enqKeyed(q, undefined, 1, { priority: 100 });
      const [j] = (await claim(q, 1)).jobs;
      if (j.id === low) startedAt = j.startedAt!;
      else passed.push(Number((await raw(q, j.id)).ca));
      await sleep(2);
    }
    expect(startedAt).toBeGreaterThan(0);
    // Its effective priority reached 100 after 200 steps of 5 ms: it starts
    // then, give or take the jobs already ahead of it.
    expect(startedAt - lowAt).toBeGreaterThanOrEqual(200 * 5);
    expect(startedAt - lowAt).toBeLessThan(200 * 5 + 300);
    // No job enqueued after it had aged to the top went first.
    expect(passed.filter((ca) => ca > lowAt + 200 * 5)).toEqual([]);
  });

  it('without aging the low job waits behind every priority-100 job', async () => {
    const q = newQueue();
    const [low] = await enqKeyed(q, undefined, 1, { priority: -100 });
    for (let round = 0; round < 100; round++) {
      await enqKeyed(q, undefined, 2, { priority: 100 });
      const c = await claim(q, 1);
      expect(c.jobs[0].id).not.toBe(low);
      await sleep(2);
    }
  });
});
