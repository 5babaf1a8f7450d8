/**
 * The Lua scripts' second line of defence (lua/includes/clamp.lua): called
 * directly with out-of-range ARGV and meta values the API would refuse, no
 * script errors, no time past the Date range, no NaN score and no key left
 * without expiry.
 */
import { openStore, TestStore } from '../../support/redis';
import { scriptHelpers } from '../../support/scripts';

const MAX_TIME_MS = 8_640_000_000_000_000;
const YEAR_MS = 31_536_000_000;
const MAX_LEASE_MS = 2_147_483_647;
const DAY_MS = 86_400_000;
const HUGE = ['1e+20', '10000000000000000000', 'inf', '1e+400'];

let t: TestStore;
beforeAll(async () => {
  t = await openStore('clamps');
});
afterAll(async () => {
  await t.close();
});
const { newQueue, enq, claimOne, events, raw, redisNow } = scriptHelpers(() => t, 'clamps');
const run = <T>(name: Parameters<TestStore['scripts']['run']>[0], keys: string[], args: (string | number)[]) => t.scripts.run<T>(name, keys, args);
const isInt = (s: string | null | undefined) => typeof s === 'string' && /^-?\d+$/.test(s);

describe('failJob: the backoff delay', () => {
  it.each(HUGE)('%s ms → the retry is one year ahead, written as integers everywhere', async (delay) => {
    const q = newQueue();
    const { id, token } = await claimOne(q, { maxAttempts: 3 });
    const k = t.keys(q);
    const before = await redisNow();
    const [code, status] = await run<[number, string]>('failJob', [k.active, k.delayed, k.waiting, k.failed, k.events, k.wake, k.meta], [k.base, id, token, 'boom', '1', delay, 'error', 'w1']);
    const after = await redisNow();
    expect([code, status]).toEqual([1, 'delayed']);
    const h = await raw(q, id);
    expect(isInt(h.ra)).toBe(true);
    expect(Number(h.ra)).toBeGreaterThanOrEqual(before + YEAR_MS);
    expect(Number(h.ra)).toBeLessThanOrEqual(after + YEAR_MS);
    expect(await t.redis.zscore(k.delayed, id)).toBe(h.ra);
    const ev = (await events(q, id)).find((e) => e.e === 'retry_scheduled')!;
    expect(ev.ra).toBe(h.ra);
    expect((await t.store.getJob(q, id))!.runAt).toBe(Number(h.ra));
  });

  it.each(['nan', '-5', 'abc', '-1e+20'])('%s → retried now (waiting), no error', async (delay) => {
    const q = newQueue();
    const { id, token } = await claimOne(q, { maxAttempts: 3 });
    const k = t.keys(q);
    const [code, status] = await run<[number, string]>('failJob', [k.active, k.delayed, k.waiting, k.failed, k.events, k.wake, k.meta], [k.base, id, token, 'boom', '1', delay, 'error', 'w1']);
    expect([code, status]).toEqual([1, 'waiting']);
    expect(isInt(await t.redis.zscore(k.waiting, id))).toBe(true);
  });
});

describe('leases', () => {
  it.each(HUGE)('claimJobs with lease %s: the lease ends within 2^31-1 ms', async (lease) => {
    const q = newQueue();
    const id = await enq(q);
    const k = t.keys(q);
    const before = await redisNow();
    const out = await run<any[]>('claimJobs', [k.waiting, k.delayed, k.active, k.meta, k.events, k.wake, k.rateLimit, k.failed], [k.base, 'nan', lease, 'w1', 'tok.', '1', '0', '1']);
    expect(out[0]).toBe(0);
    expect(out.slice(2).map((j) => j[0])).toEqual([id]);
    const score = await t.redis.zscore(k.active, id);
    expect(isInt(score)).toBe(true);
    expect(Number(score) - before).toBeLessThanOrEqual(MAX_LEASE_MS + 1000);
    expect(Number(score) - before).toBeGreaterThan(MAX_LEASE_MS - 1000);
    expect((await raw(q, id)).ll).toBe(String(MAX_LEASE_MS));
  });

  it.each(HUGE)('extendLocks with lease %s: the lease ends within 2^31-1 ms', async (lease) => {
    const q = newQueue();
    const { id, token } = await claimOne(q);
    const k = t.keys(q);
    const before = await redisNow();
    const [exp, code] = await run<number[]>('extendLocks', [k.active], [k.base, lease, id, token]);
    expect(code).toBe(1);
    expect(exp - before).toBeLessThanOrEqual(MAX_LEASE_MS + 1000);
    expect(isInt(await t.redis.zscore(k.active, id))).toBe(true);
  });

  it.each(HUGE)('renewLock with ttl %s: the lock keeps an expiry within 2^31-1 ms', async (ttl) => {
    const key = `${t.prefix}:lock:${ttl}`;
    await t.redis.set(key, 'me', 'PX', 10_000);
    expect(await run<number>('renewLock', [key], ['me', ttl])).toBe(1);
    const pttl = await t.redis.pttl(key);
    expect(pttl).toBeGreaterThan(10_000);
    expect(pttl).toBeLessThanOrEqual(MAX_LEASE_MS);
  });
});

describe('claimJobs: a rate limit read from meta is checked before any write', () => {
  const claim = (q: string) => {
    const k = t.keys(q);
    return run<any[]>('claimJobs', [k.waiting, k.delayed, k.active, k.meta, k.events, k.wake, k.rateLimit, k.failed], [k.base, 10, 30_000, 'w1', 'tok.', '0', '0', '1']);
  };

  it.each(HUGE)('window %s: jobs start, the counter expires within a day', async (dur) => {
    const q = newQueue();
    const k = t.keys(q);
    await t.redis.hset(k.meta, 'rlMax', '2', 'rlDur', dur);
    await enq(q);
    await enq(q);
    await enq(q);
    const first = await claim(q);
    expect(first.length - 2).toBe(2);
    const ttl = await t.redis.pttl(k.rateLimit);
    expect(ttl).toBeGreaterThan(DAY_MS - 5000);
    expect(ttl).toBeLessThanOrEqual(DAY_MS);
    const second = await claim(q);
    expect(second[0]).toBe(3);
    expect(second[1]).toBeLessThanOrEqual(DAY_MS);
  });

  it('a counter left without expiry (or with a longer one) gets the window\'s expiry at the next claim', async () => {
    for (const setup of [(key: string) => t.redis.set(key, '5'), (key: string) => t.redis.set(key, '5', 'PX', 9e15)]) {
      const q = newQueue();
      const k = t.keys(q);
      await t.redis.hset(k.meta, 'rlMax', '5', 'rlDur', '200');
      await setup(k.rateLimit);
      await enq(q);
      const blocked = await claim(q);
      expect(blocked[0]).toBe(3);
      expect(blocked[1]).toBeLessThanOrEqual(200);
      const ttl = await t.redis.pttl(k.rateLimit);
      expect(ttl).toBeGreaterThan(0);
      expect(ttl).toBeLessThanOrEqual(200);
    }
  });

  it('a counter that is not an integer starts a new window instead of failing the claim halfway', async () => {
    const q = newQueue();
    const k = t.keys(q);
    await t.redis.hset(k.meta, 'rlMax', '5', 'rlDur', '1000');
    await t.redis.set(k.rateLimit, '1e5');
    const id = await enq(q);
    const out = await claim(q);
    expect(out.slice(2).map((j) => j[0])).toEqual([id]);
    expect(await t.redis.get(k.rateLimit)).toBe('1');
    expect(await t.redis.pttl(k.rateLimit)).toBeGreaterThan(0);
  });

  it('a maxConcurrency or rlMax that is not a number is no limit', async () => {
    const q = newQueue();
    const k = t.keys(q);
    await t.redis.hset(k.meta, 'mc', 'nan', 'rlMax', 'abc', 'rlDur', 'nan');
    await enq(q);
    await enq(q);
    expect((await claim(q)).length - 2).toBe(2);
  });
});

describe('enqueueJobs: delays, absolute times and priorities out of range', () => {
  const enqRaw = async (q: string, priority: string, mode: string, value: string) => {
    const k = t.keys(q);
    const id = `0190abcd-0000-7000-8000-${Math.floor(Math.random() * 1e12).toString().padStart(12, '0')}`;
    const out = await run<any[]>('enqueueJobs', [k.waiting, k.delayed, k.events, k.wake, k.meta], [
      k.base, 3, 'exponential|2000|3600000|equal', 600_000, 86_400_000, 1, 1,
      id, 't', '{}', priority, mode, value, '', '', '', '', '', '', '', '',
    ]);
    expect(out[0][0]).toBe(1);
    return id;
  };

  it.each(HUGE)('delayMs %s → one year ahead', async (v) => {
    const q = newQueue();
    const before = await redisNow();
    const id = await enqRaw(q, '0', 'd', v);
    const h = await raw(q, id);
    expect(h.s).toBe('delayed');
    expect(isInt(h.ra)).toBe(true);
    expect(Number(h.ra) - before).toBeGreaterThanOrEqual(YEAR_MS);
    expect(Number(h.ra) - before).toBeLessThanOrEqual(YEAR_MS + 1000);
    expect(await t.redis.zscore(t.keys(q).delayed, id)).toBe(h.ra);
  });

  it.each(HUGE)('runAt %s → the end of the Date range, readable', async (v) => {
    const q = newQueue();
    const id = await enqRaw(q, '0', 'a', v);
    const h = await raw(q, id);
    expect(h.ra).toBe(String(MAX_TIME_MS));
    expect((await t.store.getJob(q, id))!.runAt).toBe(MAX_TIME_MS);
    const ev = (await events(q, id))[0];
    expect(ev.ra).toBe(String(MAX_TIME_MS));
  });

  it.each([['nan', 'd'], ['nan', 'a'], ['-1e+20', 'a'], ['-1e+20', 'd']])('%s (mode %s) → runs now', async (v, mode) => {
    const q = newQueue();
    const before = await redisNow();
    const id = await enqRaw(q, '0', mode, v);
    const h = await raw(q, id);
    expect(h.s).toBe('waiting');
    // runAt is createdAt (no field) or an integer no earlier than the enqueue.
    expect(h.ra === undefined || (isInt(h.ra) && Number(h.ra) >= before)).toBe(true);
  });

  it.each([['1e+20', '100'], ['-1e+20', '-100'], ['nan', '0'], ['7.5', '7']])('priority %s → stored as %s, score an exact integer', async (p, stored) => {
    const q = newQueue();
    const id = await enqRaw(q, p, '', '0');
    expect((await raw(q, id)).pr).toBe(stored);
    const score = await t.redis.zscore(t.keys(q).waiting, id);
    expect(isInt(score)).toBe(true);
    expect(Number(score)).toBeLessThan(2 ** 53);
    expect(Number(score)).toBeGreaterThanOrEqual(0);
  });
});

describe('waiting scores from a hand-edited priority', () => {
  it.each(['nan', '1e+20', '-inf'])('a delayed job with priority %s is promoted with a finite score', async (pr) => {
    const q = newQueue();
    const id = await enq(q, { delayMs: 50 });
    await t.redis.hset(`${t.keys(q).base}job:${id}`, 'pr', pr);
    await new Promise((r) => setTimeout(r, 80));
    expect((await t.store.promoteDelayed(q, 'nan' as unknown as number)).promoted).toBe(1);
    const score = await t.redis.zscore(t.keys(q).waiting, id);
    expect(isInt(score)).toBe(true);
    expect(Number(score)).toBeLessThan(2 ** 53);
    expect(Number(score)).toBeGreaterThanOrEqual(0);
  });
});
