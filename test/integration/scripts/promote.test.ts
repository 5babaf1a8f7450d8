/**
 * promoteDelayed-5.lua (and the shared includes/promote.lua) through
 * RedisJobStore.promoteDelayed, on real Redis.
 */
import { openStore, sleep, TestStore } from '../../support/redis';
import { efta, expectLegal, ids, scriptHelpers } from '../../support/scripts';

let t: TestStore;
beforeAll(async () => {
  t = await openStore('promote');
});
afterAll(async () => t.close());

// ---- helpers (each test uses its own queue, so sets and events are its own) ----
const { queues, newQueue, enq, events, jk, raw, redisNow } = scriptHelpers(() => t, 'pr');

describe('promoteDelayed', () => {
  it('moves due jobs only, one promoted event each, and says when the next is due', async () => {
    const q = newQueue();
    const k = t.keys(q);
    const a = await enq(q, { delayMs: 50 });
    const b = await enq(q, { delayMs: 60 });
    const c = await enq(q, { delayMs: 10_000 });
    await sleep(100);
    await t.redis.del(k.wake);
    const r = await t.store.promoteDelayed(q, 100);
    expect(r.promoted).toBe(2);
    expect(r.nextInMs).toBeGreaterThan(9000);
    expect(r.nextInMs).toBeLessThanOrEqual(10_000);
    for (const id of [a, b]) {
      expect((await t.store.getJob(q, id))!.status).toBe('waiting');
      expect(await t.redis.zscore(k.delayed, id)).toBeNull();
      expect(await t.redis.zscore(k.waiting, id)).not.toBeNull();
      expect(efta(await events(q, id))).toEqual([
        ['enqueued', '', 'delayed', 0],
        ['promoted', 'delayed', 'waiting', 0],
      ]);
    }
    expect((await t.store.getJob(q, c))!.status).toBe('delayed');
    expect(await t.redis.zscore(k.waiting, c)).toBeNull();
    expect(await t.redis.llen(k.wake)).toBe(1);
    expect(ids(await t.store.claim(q, 10, 1000, 'w'))).toEqual([a, b]);
  });

  it('an empty delayed set: {0, -1}; nothing due: {0, ms until due}, no wake', async () => {
    const q = newQueue();
    const k = t.keys(q);
    expect(await t.store.promoteDelayed(q, 10)).toEqual({ promoted: 0, nextInMs: -1 });
    await enq(q, { delayMs: 5000 });
    await t.redis.del(k.wake);
    const r = await t.store.promoteDelayed(q, 10);
    expect(r.promoted).toBe(0);
    expect(r.nextInMs).toBeGreaterThan(4000);
    expect(await t.redis.exists(k.wake)).toBe(0);
  });

  it('respects the limit; nextInMs is 0 while due jobs remain', async () => {
    const q = newQueue();
    for (let i = 0; i < 5; i++) await enq(q, { delayMs: 20 });
    await sleep(60);
    expect(await t.store.promoteDelayed(q, 2)).toEqual({ promoted: 2, nextInMs: 0 });
    expect(await t.store.promoteDelayed(q, 10)).toEqual({ promoted: 3, nextInMs: -1 });
    expect(await t.redis.zcard(t.keys(q).waiting)).toBe(5);
  });

  it('never promotes early, on the Redis clock (C12 shape: fires at runAt with no other traffic)', async () => {
    const q = newQueue();
    const id = await enq(q, { delayMs: 300 });
    const runAt = (await t.store.getJob(q, id))!.runAt;
    let promotedAt = 0;
    while (!promotedAt) {
      const before = await redisNow();
      const r = await t.store.promoteDelayed(q, 10);
      if (r.promoted) {
        promotedAt = Number((await events(q, id))[1].at);
        expect(promotedAt).toBeGreaterThanOrEqual(before);
      } else {
        expect(before).toBeLessThan(runAt + 5);
        await sleep(Math.max(1, Math.min(r.nextInMs, 10)));
      }
    }
    expect(promotedAt).toBeGreaterThanOrEqual(runAt);
    expect(promotedAt - runAt).toBeLessThan(100);
  });

  it('a promoted job keeps its priority and its enqueue-time place', async () => {
    const q = newQueue();
    const delayedLow = await enq(q, { delayMs: 30 });
    const later = await enq(q);
    const delayedHigh = await enq(q, { delayMs: 30, priority: 5 });
    await sleep(60);
    expect((await t.store.promoteDelayed(q, 10)).promoted).toBe(2);
    expect(await t.redis.zscore(t.keys(q).waiting, delayedHigh)).toBe(String(95 * 2 ** 44 + 3));
    expect(ids(await t.store.claim(q, 10, 1000, 'w'))).toEqual([delayedHigh, delayedLow, later]);
  });

  it('a retry waiting out its backoff is promoted with its attempt count', async () => {
    const q = newQueue();
    const id = await enq(q, { maxAttempts: 3 });
    const c = await t.store.claim(q, 1, 30_000, 'w');
    await t.store.fail(q, id, c.jobs[0].lockToken, { error: 'e', retryable: true, delayMs: 30, reason: 'error', workerId: 'w' });
    await sleep(60);
    expect((await t.store.promoteDelayed(q, 10)).promoted).toBe(1);
    expect((await events(q, id)).pop()).toMatchObject({ e: 'promoted', f: 'delayed', t: 'waiting', a: '1' });
    expect((await t.store.claim(q, 1, 1000, 'w')).jobs[0]).toMatchObject({ id, attempts: 2 });
  });

  it('a cancelled delayed job is never promoted', async () => {
    const q = newQueue();
    const id = await enq(q, { delayMs: 20 });
    expect(await t.store.cancel(q, id)).toBe('cancelled');
    await sleep(40);
    expect(await t.store.promoteDelayed(q, 10)).toEqual({ promoted: 0, nextInMs: -1 });
    expect((await t.store.getJob(q, id))!.status).toBe('cancelled');
  });

  describe('stale entries (refusals): dropped without an event, the job untouched', () => {
    it('a job in another valid state, and a job that no longer exists', async () => {
      const q = newQueue();
      const k = t.keys(q);
      const id = await enq(q);
      const c = await t.store.claim(q, 1, 30_000, 'w');
      await t.store.complete(q, 'w', [{ id, lockToken: c.jobs[0].lockToken, result: 1 }]);
      const hash = await raw(q, id);
      const evLen = await t.redis.xlen(k.events);
      await t.redis.zadd(k.delayed, 1, id, 2, 'gone');
      const r = await t.store.promoteDelayed(q, 10);
      expect(r.nextInMs).toBe(-1);
      expect(await t.redis.zcard(k.delayed)).toBe(0);
      expect(await t.redis.zcard(k.waiting)).toBe(0);
      expect(await raw(q, id)).toEqual(hash);
      expect(await t.redis.xlen(k.events)).toBe(evLen);
      expect(await t.redis.exists(jk(q, 'gone'))).toBe(0);
    });
  });

  describe('corrupted delayed jobs go to the DLQ with a decode error, the others are promoted', () => {
    it.each([
      ['key replaced by a string', (q: string, id: string) => t.redis.multi().del(jk(q, id)).set(jk(q, id), 'garbage').exec(), /^decode error: .*WRONGTYPE/],
      ["state 's' set to garbage", (q: string, id: string) => t.redis.hset(jk(q, id), 's', 'garbage'), /^decode error: unknown state/],
      ["state 's' deleted", (q: string, id: string) => t.redis.hdel(jk(q, id), 's'), /^decode error: state missing/],
      ["priority 'pr' deleted", (q: string, id: string) => t.redis.hdel(jk(q, id), 'pr'), /^decode error: priority or sequence missing/],
    ])('%s', async (_name, corrupt, why) => {
      const q = newQueue();
      const k = t.keys(q);
      const good1 = await enq(q, { delayMs: 20 });
      const bad = await enq(q, { delayMs: 20 });
      const good2 = await enq(q, { delayMs: 20 });
      await corrupt(q, bad);
      await sleep(50);
      await t.store.promoteDelayed(q, 10);
      expect(await t.redis.zscore(k.delayed, bad)).toBeNull();
      expect(await t.redis.zscore(k.waiting, bad)).toBeNull();
      expect(await t.redis.zscore(k.failed, bad)).not.toBeNull();
      const h = await raw(q, bad);
      expect(h.s).toBe('failed');
      expect(h.e).toMatch(why);
      const ev = await events(q, bad);
      expect(ev[ev.length - 1]).toMatchObject({ e: 'failed', f: 'delayed', t: 'failed', r: 'decode_error', er: h.e });
      expect(ev.filter((e) => e.e === 'failed')).toHaveLength(1);
      expect(ids(await t.store.claim(q, 10, 1000, 'w'))).toEqual([good1, good2]);
    });

    it('the claim-time promotion handles them the same way', async () => {
      const q = newQueue();
      const k = t.keys(q);
      const good = await enq(q, { delayMs: 20 });
      const bad = await enq(q, { delayMs: 20 });
      await t.redis.hset(jk(q, bad), 's', '???');
      await sleep(50);
      expect(ids(await t.store.claim(q, 10, 1000, 'w'))).toEqual([good]);
      expect(await t.redis.zscore(k.failed, bad)).not.toBeNull();
      expect((await raw(q, bad)).e).toMatch(/^decode error/);
    });
  });
});

describe('promote: audit trail', () => {
  it('every event written in this file is an allowed transition', async () => {
    for (const q of queues) expectLegal(await events(q));
  });
});
