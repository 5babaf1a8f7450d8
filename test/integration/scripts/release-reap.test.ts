/**
 * releaseJobs-6.lua, reapExpired-6.lua and extendLocks-1.lua through
 * RedisJobStore.release / reapExpired / extendLeases, on real Redis: leases,
 * heartbeats, refunds, stalled jobs and fencing by the lock token.
 */
import { openStore, sleep, TestStore } from '../../support/redis';
import { efta, expectLegal, scriptHelpers } from '../../support/scripts';

let t: TestStore;
beforeAll(async () => {
  t = await openStore('release-reap');
});
afterAll(async () => t.close());

// ---- helpers (each test uses its own queue, so sets and events are its own) ----
const { queues, newQueue, enq, claimOne, staleToken, events, jk, raw, snapshot, redisNow } = scriptHelpers(() => t, 'rr');
const lease = (id: string, lockToken: string) => ({ id, lockToken });

describe('release', () => {
  it('puts the job back in its original place with the attempt refunded, one released event', async () => {
    const q = newQueue();
    const k = t.keys(q);
    const { id, token } = await claimOne(q, { maxAttempts: 2 });
    const score = String(100 * 2 ** 44 + 1);
    const later = await enq(q);
    await t.redis.del(k.wake);
    expect(await t.store.release(q, 'w1', [lease(id, token)])).toEqual(['released']);
    const j = (await t.store.getJob(q, id))!;
    expect(j).toMatchObject({ status: 'waiting', attempts: 0, executionSeq: 1 });
    expect(await t.redis.zscore(k.waiting, id)).toBe(score);
    expect(await t.redis.zscore(k.active, id)).toBeNull();
    expect(await t.redis.llen(k.wake)).toBe(1);
    const ev = await events(q, id);
    expect(efta(ev.slice(2))).toEqual([['released', 'active', 'waiting', 1]]);
    expect(ev[2]).toMatchObject({ r: 'shutdown', w: 'w1', x: '1' });

    const again = await t.store.claim(q, 5, 30_000, 'w2');
    expect(again.jobs.map((x) => x.id)).toEqual([id, later]);
    expect(again.jobs[0]).toMatchObject({ attempts: 1, executionSeq: 2, workerId: 'w2' });
  });

  it('with a delay: delayed until now + delay with the attempt refunded, the event carries runAt and the reason', async () => {
    const q = newQueue();
    const k = t.keys(q);
    const { id, token } = await claimOne(q);
    const now = await redisNow();
    expect(await t.store.release(q, 'ext-1', [lease(id, token)], { delayMs: 60_000, reason: 'worker' })).toEqual(['released']);
    const j = (await t.store.getJob(q, id))!;
    expect(j).toMatchObject({ status: 'delayed', attempts: 0 });
    expect(j.runAt).toBeGreaterThanOrEqual(now + 60_000);
    expect(j.runAt).toBeLessThan(now + 65_000);
    expect(Number(await t.redis.zscore(k.delayed, id))).toBe(j.runAt);
    expect(await t.redis.zscore(k.waiting, id)).toBeNull();
    expect(await t.redis.zscore(k.active, id)).toBeNull();
    const ev = await events(q, id);
    expect(efta(ev.slice(2))).toEqual([['released', 'active', 'delayed', 1]]);
    expect(ev[2]).toMatchObject({ r: 'worker', w: 'ext-1', ra: String(j.runAt) });
    expect((await t.store.claim(q, 1, 30_000, 'w2')).jobs).toEqual([]);
  });

  it('a refunded attempt does not use up maxAttempts', async () => {
    const q = newQueue();
    const id = await enq(q, { maxAttempts: 1 });
    for (let i = 0; i < 3; i++) {
      const c = await t.store.claim(q, 1, 30_000, 'w1');
      expect(c.jobs[0]).toMatchObject({ id, attempts: 1, executionSeq: i + 1 });
      expect(await t.store.release(q, 'w1', [lease(id, c.jobs[0].lockToken)])).toEqual(['released']);
    }
    const c = await t.store.claim(q, 1, 30_000, 'w1');
    expect(await t.store.fail(q, id, c.jobs[0].lockToken, { error: 'x', retryable: true, delayMs: 0, reason: 'error', workerId: 'w1' })).toBe('failed');
    expect((await t.store.getJob(q, id))!).toMatchObject({ attempts: 1, maxAttempts: 1, executionSeq: 4 });
  });

  it('a pending cancel request ends the job cancelled instead', async () => {
    const q = newQueue();
    const { id, token } = await claimOne(q);
    await t.store.cancel(q, id);
    expect(await t.store.release(q, 'w1', [lease(id, token)])).toEqual(['cancelled']);
    expect((await t.store.getJob(q, id))!.status).toBe('cancelled');
    const k = t.keys(q);
    for (const set of [k.waiting, k.active]) expect(await t.redis.zscore(set, id)).toBeNull();
    const ev = await events(q, id);
    expect(efta(ev.slice(2))).toEqual([
      ['cancel_requested', 'active', 'active', 1],
      ['cancelled', 'active', 'cancelled', 1],
    ]);
    expect(ev[3].r).toBe('released');
  });

  it('answers a batch per job, in order', async () => {
    const q = newQueue();
    await Promise.all([enq(q), enq(q), enq(q)]);
    const [a, b, c] = (await t.store.claim(q, 3, 30_000, 'w1')).jobs;
    await t.store.cancel(q, c.id);
    const before = { ...(await snapshot(q, b.id)), ev: 0 };
    expect(await t.store.release(q, 'w1', [lease(a.id, a.lockToken), lease(b.id, 'wrong'), lease('missing', 'x'), lease(c.id, c.lockToken)])).toEqual([
      'released',
      'lease_lost',
      'not_found',
      'cancelled',
    ]);
    const after = { ...(await snapshot(q, b.id)), ev: 0 };
    expect(after).toEqual(before);
    expect(efta(await events(q, b.id))).toEqual([
      ['enqueued', '', 'waiting', 0],
      ['claimed', 'waiting', 'active', 1],
    ]);
  });

  describe('refusals change nothing', () => {
    it('wrong lock token', async () => {
      const q = newQueue();
      const { id, token } = await claimOne(q);
      const before = await snapshot(q, id);
      expect(await t.store.release(q, 'w1', [lease(id, token.slice(0, -1) + 'Z')])).toEqual(['lease_lost']);
      expect(await snapshot(q, id)).toEqual(before);
    });

    it('stale token after the lease was reaped and the job re-claimed', async () => {
      const q = newQueue();
      const { id, stale, current } = await staleToken(q);
      const before = await snapshot(q, id);
      expect(await t.store.release(q, 'w-old', [lease(id, stale)])).toEqual(['lease_lost']);
      expect(await snapshot(q, id)).toEqual(before);
      expect(await t.store.release(q, 'w-new', [lease(id, current)])).toEqual(['released']);
    });

    it('wrong state: waiting and completed jobs', async () => {
      const q = newQueue();
      const waiting = await enq(q, { priority: -1 });
      const done = await claimOne(q);
      await t.store.complete(q, 'w1', [{ id: done.id, lockToken: done.token, result: 1 }]);
      for (const [id, token] of [[waiting, 'x'], [done.id, done.token]]) {
        const before = await snapshot(q, id);
        expect(await t.store.release(q, 'w1', [lease(id, token)])).toEqual(['lease_lost']);
        expect(await snapshot(q, id)).toEqual(before);
      }
    });

    it('unknown job', async () => {
      const q = newQueue();
      expect(await t.store.release(q, 'w1', [lease('nope', 'x')])).toEqual(['not_found']);
      expect(await t.redis.exists(jk(q, 'nope'))).toBe(0);
      expect(await t.redis.xlen(t.keys(q).events)).toBe(0);
    });
  });
});

describe('reapExpired', () => {
  it('moves only expired leases: stalled back to the original place, the attempt counted', async () => {
    const q = newQueue();
    const k = t.keys(q);
    const short = await claimOne(q, { maxAttempts: 3 }, 100, 'w-short');
    const long = await claimOne(q, { maxAttempts: 3 }, 30_000, 'w-long');
    await sleep(150);
    await t.redis.del(k.wake);
    const r = await t.store.reapExpired(q, 100);
    expect(r.reaped).toBe(1);
    expect(r.nextInMs).toBeGreaterThan(25_000);
    expect(r.nextInMs).toBeLessThanOrEqual(30_000);
    const j = (await t.store.getJob(q, short.id))!;
    expect(j).toMatchObject({ status: 'waiting', attempts: 1, executionSeq: 1 });
    expect(j.lastError).toMatch(/lease expired/);
    expect(await t.redis.zscore(k.waiting, short.id)).toBe(String(100 * 2 ** 44 + 1));
    expect(await t.redis.zscore(k.active, short.id)).toBeNull();
    expect(await t.redis.llen(k.wake)).toBe(1);
    expect((await t.store.getJob(q, long.id))!.status).toBe('active');
    expect(await t.redis.zscore(k.active, long.id)).toBe(String(long.job.leaseExpiresAt));

    const ev = await events(q, short.id);
    expect(efta(ev.slice(2))).toEqual([['stalled', 'active', 'waiting', 1]]);
    expect(ev[2]).toMatchObject({ r: 'lease_expired', w: 'w-short', x: '1' });
    expect(efta(await events(q, long.id))).toEqual([
      ['enqueued', '', 'waiting', 0],
      ['claimed', 'waiting', 'active', 1],
    ]);

    const again = await t.store.claim(q, 1, 30_000, 'w2');
    expect(again.jobs[0]).toMatchObject({ id: short.id, attempts: 2, executionSeq: 2 });
  });

  it('nothing to reap: 0 and nextInMs -1 for an empty active set', async () => {
    const q = newQueue();
    expect(await t.store.reapExpired(q, 10)).toEqual({ reaped: 0, nextInMs: -1 });
  });

  it('never touches a heartbeated job', async () => {
    const q = newQueue();
    const { id, token } = await claimOne(q, { maxAttempts: 3 }, 150);
    const until = Date.now() + 600;
    while (Date.now() < until) {
      const hb = await t.store.extendLeases(q, [lease(id, token)], 150);
      expect(hb.statuses).toEqual(['ok']);
      expect((await t.store.reapExpired(q, 10)).reaped).toBe(0);
      await sleep(50);
    }
    expect((await t.store.getJob(q, id))!.status).toBe('active');
    expect(efta(await events(q, id)).map((e) => e[0])).toEqual(['enqueued', 'claimed']);
    await sleep(200);
    expect((await t.store.reapExpired(q, 10)).reaped).toBe(1);
    expect((await t.store.getJob(q, id))!.status).toBe('waiting');
  });

  it('attempts spent: the dead-letter queue with reason lease_expired (C6/C7)', async () => {
    const q = newQueue();
    const k = t.keys(q);
    const id = await enq(q, { maxAttempts: 2 });
    for (let attempt = 1; attempt <= 2; attempt++) {
      const c = await t.store.claim(q, 1, 100, `w${attempt}`);
      expect(c.jobs[0]).toMatchObject({ id, attempts: attempt });
      await sleep(150);
      expect((await t.store.reapExpired(q, 10)).reaped).toBe(1);
    }
    const j = (await t.store.getJob(q, id))!;
    expect(j).toMatchObject({ status: 'failed', attempts: 2, maxAttempts: 2 });
    expect(j.lastError).toMatch(/^lease expired/);
    expect(j.finishedAt).toEqual(expect.any(Number));
    expect(await t.redis.zscore(k.failed, id)).toBe(String(j.finishedAt));
    expect(await t.redis.zscore(k.waiting, id)).toBeNull();
    const ev = await events(q, id);
    expect(efta(ev)).toEqual([
      ['enqueued', '', 'waiting', 0],
      ['claimed', 'waiting', 'active', 1],
      ['stalled', 'active', 'waiting', 1],
      ['claimed', 'waiting', 'active', 2],
      ['stalled', 'active', 'active', 2],
      ['failed', 'active', 'failed', 2],
    ]);
    expect(ev[4]).toMatchObject({ r: 'lease_expired', w: 'w2' });
    expect(ev[5]).toMatchObject({ r: 'lease_expired', er: j.lastError, w: 'w2' });
  });

  it('a pending cancel request: the job ends cancelled', async () => {
    const q = newQueue();
    const { id } = await claimOne(q, { maxAttempts: 3 }, 100);
    expect(await t.store.cancel(q, id)).toBe('active');
    await sleep(150);
    expect((await t.store.reapExpired(q, 10)).reaped).toBe(1);
    expect((await t.store.getJob(q, id))!.status).toBe('cancelled');
    const ev = await events(q, id);
    expect(efta(ev.slice(2))).toEqual([
      ['cancel_requested', 'active', 'active', 1],
      ['cancelled', 'active', 'cancelled', 1],
    ]);
    expect(ev[3].r).toBe('lease_expired');
  });

  it('respects the limit per call', async () => {
    const q = newQueue();
    await Promise.all(Array.from({ length: 5 }, () => enq(q)));
    expect((await t.store.claim(q, 5, 100, 'w')).jobs).toHaveLength(5);
    await sleep(150);
    expect((await t.store.reapExpired(q, 2)).reaped).toBe(2);
    expect(await t.store.reapExpired(q, 10)).toEqual({ reaped: 3, nextInMs: -1 });
  });

  it('drops stale active entries (job completed meanwhile, job gone) without touching the job', async () => {
    const q = newQueue();
    const k = t.keys(q);
    const done = await claimOne(q);
    await t.store.complete(q, 'w1', [{ id: done.id, lockToken: done.token, result: 'kept' }]);
    const before = await snapshot(q, done.id);
    await t.redis.zadd(k.active, 1, done.id, 2, 'gone');
    const r = await t.store.reapExpired(q, 10);
    expect(r.reaped).toBe(0);
    expect(await t.redis.zcard(k.active)).toBe(0);
    const after = await snapshot(q, done.id);
    expect(after).toEqual(before);
    expect((await t.store.getJob(q, done.id))!).toMatchObject({ status: 'completed', result: 'kept' });
    expect(await t.redis.exists(jk(q, 'gone'))).toBe(0);
  });

  describe('corrupted active jobs go to the DLQ, never vanish', () => {
    it.each([
      ['key replaced by a string', (q: string, id: string) => t.redis.multi().del(jk(q, id)).set(jk(q, id), 'garbage').exec()],
      ["state 's' set to garbage", (q: string, id: string) => t.redis.hset(jk(q, id), 's', 'garbage')],
      ["state 's' deleted", (q: string, id: string) => t.redis.hdel(jk(q, id), 's')],
    ])('%s', async (_name, corrupt) => {
      const q = newQueue();
      const k = t.keys(q);
      const { id } = await claimOne(q, { maxAttempts: 3 }, 100);
      await corrupt(q, id);
      await sleep(150);
      await t.store.reapExpired(q, 10);
      expect(await t.redis.zscore(k.active, id)).toBeNull();
      expect(await t.redis.zscore(k.failed, id)).not.toBeNull();
      const h = await raw(q, id);
      expect(h.s).toBe('failed');
      expect(h.e).toMatch(/^decode error/);
      const ev = await events(q, id);
      expect(ev[ev.length - 1]).toMatchObject({ e: 'failed', f: 'active', t: 'failed', r: 'decode_error' });
      expect(ev.filter((e) => e.e === 'failed')).toHaveLength(1);
    });
  });
});

describe('extendLeases (heartbeat)', () => {
  it('renews the lease in the active set from Redis now, and writes no event', async () => {
    const q = newQueue();
    const k = t.keys(q);
    const { id, token, job } = await claimOne(q, {}, 1000);
    const evBefore = await t.redis.xlen(k.events);
    const before = await redisNow();
    const hb = await t.store.extendLeases(q, [lease(id, token)], 60_000);
    const after = await redisNow();
    expect(hb.statuses).toEqual(['ok']);
    expect(hb.leaseExpiresAt).toBeGreaterThanOrEqual(before + 60_000);
    expect(hb.leaseExpiresAt).toBeLessThanOrEqual(after + 60_000);
    expect(hb.leaseExpiresAt).toBeGreaterThan(job.leaseExpiresAt);
    expect(await t.redis.zscore(k.active, id)).toBe(String(hb.leaseExpiresAt));
    expect(await t.redis.xlen(k.events)).toBe(evBefore);
    expect((await t.store.getJob(q, id))!.status).toBe('active');
  });

  it("answers per job: ok, lease_lost (wrong token / unknown / not active), cancel_requested", async () => {
    const q = newQueue();
    await Promise.all([enq(q), enq(q), enq(q)]);
    const [a, b, c] = (await t.store.claim(q, 3, 30_000, 'w1')).jobs;
    await t.store.cancel(q, c.id);
    const done = await claimOne(q);
    await t.store.complete(q, 'w1', [{ id: done.id, lockToken: done.token, result: 1 }]);
    const scoreB = await t.redis.zscore(t.keys(q).active, b.id);
    const hb = await t.store.extendLeases(q, [lease(a.id, a.lockToken), lease(b.id, 'nope'), lease('missing', 'x'), lease(c.id, c.lockToken), lease(done.id, done.token)], 60_000);
    expect(hb.statuses).toEqual(['ok', 'lease_lost', 'lease_lost', 'cancel_requested', 'lease_lost']);
    expect(await t.redis.zscore(t.keys(q).active, b.id)).toBe(scoreB);
    expect(await t.redis.zscore(t.keys(q).active, done.id)).toBeNull();
  });

  it('a stale token renews nothing', async () => {
    const q = newQueue();
    const { id, stale } = await staleToken(q);
    const before = await snapshot(q, id);
    expect((await t.store.extendLeases(q, [lease(id, stale)], 60_000)).statuses).toEqual(['lease_lost']);
    expect(await snapshot(q, id)).toEqual(before);
  });

  it('a waiting job (reaped, not yet re-claimed) cannot be renewed by its old holder', async () => {
    const q = newQueue();
    const { id, token } = await claimOne(q, { maxAttempts: 3 }, 100);
    await sleep(150);
    await t.store.reapExpired(q, 10);
    const before = await snapshot(q, id);
    expect((await t.store.extendLeases(q, [lease(id, token)], 60_000)).statuses).toEqual(['lease_lost']);
    expect(await snapshot(q, id)).toEqual(before);
  });

  // After expiry but before the reaper, a heartbeat is refused too (API.md v1.3): lease-expiry.test.ts.
});

describe('release/reap: audit trail', () => {
  it('every event written in this file is an allowed transition', async () => {
    for (const q of queues) expectLegal(await events(q));
  });
});
