/**
 * Debounce (API.md v1.2 "Flow control per key: debounce"; lua/enqueueJobs-5.lua,
 * lua/includes/debounce.lua) through the store, on real Redis: a burst makes
 * one job with the last payload; maxWaitMs bounds an unbroken burst; two API
 * replicas racing on one key; the job's lane and sets as it moves between
 * waiting and delayed; the key freed by a claim, a cancel, a retry; options
 * reset; one batch; a resent call; the restore fence; refused inputs.
 */
import { DEFAULT_BACKOFF, encodeBackoff } from '../../../src/core/backoff';
import { ValidationError } from '../../../src/core/errors';
import type { EnqueueInput, NormalizedEnqueue } from '../../../src/core/job-options';
import type { EnqueueResult } from '../../../src/core/ports/jobs';
import { createRedis } from '../../../src/redis/connection';
import { RedisScripts } from '../../../src/redis/scripts';
import { createRedisStores } from '../../../src/redis/stores';
import { openStore, REDIS_URL, sleep, TestStore } from '../../support/redis';
import { expectLegal, scriptHelpers } from '../../support/scripts';

jest.setTimeout(60_000);

let t: TestStore;
beforeAll(async () => {
  t = await openStore('debounce');
});
afterAll(async () => t.close());

const { newQueue, norm, events, raw, redisNow } = scriptHelpers(() => t, 'deb');
type Deb = NonNullable<NormalizedEnqueue['debounce']>;
/** A normalized enqueue with debounce (and a concurrency key when given), as the API's validation makes it. */
const debJob = (q: string, debounce: Deb, input: Partial<EnqueueInput> = {}, concurrencyKey?: string): NormalizedEnqueue => ({
  ...norm(q, input),
  debounce,
  ...(concurrencyKey ? { concurrencyKey } : {}),
});
async function deb(q: string, debounce: Deb, input: Partial<EnqueueInput> = {}, concurrencyKey?: string): Promise<EnqueueResult> {
  const [r] = await t.store.enqueue([debJob(q, debounce, input, concurrencyKey)]);
  return r;
}
/** Where a job is: its status in the hash and its score in each set (null = not there). */
async function where(q: string, id: string, lanes: string[] = []) {
  const k = t.keys(q);
  const [h, w, d] = await Promise.all([raw(q, id), t.redis.zscore(k.waiting, id), t.redis.zscore(k.delayed, id)]);
  const inLanes: Record<string, boolean> = {};
  for (const l of lanes) inLanes[l] = (await t.redis.zscore(`${k.base}${l === '' ? 'lane' : `lane:${l}`}`, id)) !== null;
  return { s: h.s, waiting: w !== null, delayed: d !== null, lanes: inLanes };
}
const claim = (q: string, n = 1) => t.store.claim(q, n, 30_000, 'w1');

describe('a burst', () => {
  it('8 enqueues with one key make one job with the last payload, due at the last enqueue + windowMs; once claimed, the key makes a new job', async () => {
    const q = newQueue();
    // A window the checks below cannot outlast under a loaded full suite (300 ms did once: the job was due by the "not due yet" claim).
    const d = { key: 'user:1', windowMs: 2000 };
    const rs: EnqueueResult[] = [];
    for (let i = 0; i < 8; i++) rs.push(await deb(q, d, { payload: { i } }));
    const id = rs[0].id;
    expect(rs.map((r) => r.id)).toEqual(Array(8).fill(id));
    expect(rs.map((r) => r.debounced === true)).toEqual([false, true, true, true, true, true, true, true]);
    expect(rs.map((r) => r.status)).toEqual(Array(8).fill('delayed'));
    expect(rs.every((r) => !r.replayed)).toBe(true);
    const last = rs[7].created!;
    // The answer renders the job as it now is: its first createdAt, the new runAt.
    expect(last.createdAt).toBe(rs[0].created!.createdAt);
    expect(last.runAt).toBe(last.updatedAt! + d.windowMs);
    const h = await raw(q, id);
    expect(Number(h.ra)).toBe(last.runAt);
    expect(await t.redis.zscore(t.keys(q).delayed, id)).toBe(String(last.runAt));
    expect(await t.redis.zcard(t.keys(q).delayed)).toBe(1);
    expect(await t.redis.zcard(t.keys(q).waiting)).toBe(0);
    const job = await t.store.getJob(q, id);
    expect(job).toMatchObject({ payload: { i: 7 }, status: 'delayed', runAt: last.runAt, createdAt: last.createdAt, updatedAt: last.updatedAt });
    const evs = await events(q, id);
    expect(evs.map((e) => e.e)).toEqual(['enqueued', ...Array(7).fill('debounced')]);
    expectLegal(evs);
    expect(evs.map((e) => JSON.parse(e.p).i)).toEqual([0, 1, 2, 3, 4, 5, 6, 7]);
    expect(Number(evs[7].ra)).toBe(last.runAt);

    // Not due yet: nothing to claim.
    expect((await claim(q)).jobs).toEqual([]);
    await sleep(last.runAt - (await redisNow()) + 20);
    const c = await claim(q);
    expect(c.jobs.map((j) => [j.id, j.payload])).toEqual([[id, { i: 7 }]]);
    // Claimed: the key is free, the next enqueue creates a job (201).
    const next = await deb(q, d, { payload: { i: 8 } });
    expect(next.id).not.toBe(id);
    expect(next.debounced).toBeUndefined();
    expect(next.status).toBe('delayed');
    expect(await t.redis.get(`${t.keys(q).base}deb:user:1`)).toBe(next.id);
    expect((await raw(q, id)).s).toBe('active');
  });

  it('an unbroken burst (every windowMs/2 for 3 × maxWaitMs) runs a job every maxWaitMs', async () => {
    const q = newQueue();
    const windowMs = 400;
    const maxWaitMs = 1200;
    const d = { key: 'k', windowMs, maxWaitMs };
    const created: EnqueueResult[] = [];
    const claimedAt = new Map<string, number>();
    let stop = false;
    // A worker that claims as soon as a job is due.
    const worker = (async () => {
      while (!stop) {
        const c = await claim(q, 10);
        for (const j of c.jobs) claimedAt.set(j.id, await redisNow());
        await sleep(5);
      }
    })();
    const start = Date.now();
    let sent = 0;
    while (Date.now() - start < 3 * maxWaitMs) {
      const r = await deb(q, d, { payload: { n: sent++ } });
      if (!r.debounced) created.push(r);
      await sleep(start + sent * (windowMs / 2) - Date.now());
    }
    // The last job runs at the end of its window.
    await sleep(windowMs + 100);
    stop = true;
    await worker;
    expect(sent).toBeGreaterThanOrEqual(17);
    // 3 × maxWaitMs of enqueues: a job per maxWaitMs (the last one's window ends after the burst).
    expect(created.length).toBeGreaterThanOrEqual(3);
    expect(created.length).toBeLessThanOrEqual(4);
    const jobs = await Promise.all(
      created.map(async (r) => {
        const h = await raw(q, r.id);
        return { id: r.id, ra: Number(h.ra), ca: Number(h.ca) };
      }),
    );
    const ra = jobs.map((j) => j.ra);
    // Each job of the burst ran at its first enqueue + maxWaitMs, never later.
    for (const j of jobs.slice(0, -1)) expect(j.ra - j.ca).toBe(maxWaitMs);
    for (const j of jobs) expect(j.ra - j.ca).toBeLessThanOrEqual(maxWaitMs);
    // Runs are maxWaitMs apart, plus the wait for the next enqueue after a claim (≤ windowMs/2) and timer slack.
    for (let i = 1; i < ra.length - 1; i++) {
      expect(ra[i] - ra[i - 1]).toBeGreaterThanOrEqual(maxWaitMs);
      expect(ra[i] - ra[i - 1]).toBeLessThanOrEqual(maxWaitMs + windowMs / 2 + 150);
    }
    // Every job was claimed, each soon after it became due.
    for (const j of jobs) {
      expect(claimedAt.has(j.id)).toBe(true);
      expect(claimedAt.get(j.id)! - j.ra).toBeLessThan(200);
    }
  });

  it('two API replicas (two stores, two connections) racing on one key make exactly one job while it waits', async () => {
    const q = newQueue();
    const redis2 = createRedis({ redisUrl: REDIS_URL, redisClusterNodes: null });
    try {
      const scripts2 = new RedisScripts(redis2);
      await scripts2.verify();
      const other = createRedisStores(redis2, t.prefix, undefined, scripts2).jobs;
      const d = { key: 'hot', windowMs: 60_000 };
      const fire = (store: typeof t.store, who: string) =>
        Promise.all(Array.from({ length: 150 }, (_, i) => store.enqueue([debJob(q, d, { payload: { who, i } })]).then((r) => r[0])));
      const [a, b] = await Promise.all([fire(t.store, 'a'), fire(other, 'b')]);
      const all = [...a, ...b];
      const ids = new Set(all.map((r) => r.id));
      expect(ids.size).toBe(1);
      expect(all.filter((r) => !r.debounced)).toHaveLength(1);
      const [id] = ids;
      const k = t.keys(q);
      expect(await t.redis.zcard(k.delayed)).toBe(1);
      expect(await t.redis.zcard(k.waiting)).toBe(0);
      expect((await t.redis.keys(`${k.base}job:*`)).length).toBe(1);
      const evs = await events(q);
      expect(evs.map((e) => e.e)).toEqual(['enqueued', ...Array(299).fill('debounced')]);
      // The job holds the payload of the last update applied.
      expect((await t.store.getJob(q, id))!.payload).toEqual(JSON.parse(evs[299].p));
    } finally {
      redis2.disconnect();
    }
  });
});

describe('waiting, delayed and the lanes', () => {
  it('a keyed job made due by maxWaitMs lands in its lane; sent back to delayed it leaves the lane and the waiting set', async () => {
    const q = newQueue();
    const k = t.keys(q);
    const lanes = ['A', 'B', ''];
    // Lanes mode (a limit that never binds; without one the queue takes turns mode, lanes.lua).
    await t.stores.queues.configure(q, { keyConcurrency: 1000 });
    // Lanes mode on first, with a keyed job of another key: makeReady (lanes.lua) puts the
    // queue's very first ready keyed job in the unkeyed lane as well (reported; not debounce's).
    const z = (await t.store.enqueue([{ ...norm(q, { payload: { z: 1 } }), concurrencyKey: 'Z' }]))[0].id;
    expect((await claim(q)).jobs.map((j) => j.id)).toEqual([z]);
    const first = await deb(q, { key: 'x', windowMs: 200, maxWaitMs: 200 }, { payload: { v: 1 } }, 'A');
    const id = first.id;
    expect(await where(q, id, lanes)).toEqual({ s: 'delayed', waiting: false, delayed: true, lanes: { A: false, B: false, '': false } });
    await sleep(250);
    // maxWaitMs is over: the update makes it due at once (not promoted yet: it comes from 'delayed').
    const due = await deb(q, { key: 'x', windowMs: 200, maxWaitMs: 200 }, { payload: { v: 2 } }, 'A');
    expect([due.id, due.status, due.debounced]).toEqual([id, 'waiting', true]);
    expect(await where(q, id, lanes)).toEqual({ s: 'waiting', waiting: true, delayed: false, lanes: { A: true, B: false, '': false } });
    expect((await t.redis.hget(k.meta, 'km'))).toBe('1');
    // Waiting → waiting with another key and priority: it leaves lane A for lane B, its waiting score follows the priority.
    const moved = await deb(q, { key: 'x', windowMs: 200, maxWaitMs: 200 }, { payload: { v: 3 }, priority: 7 }, 'B');
    expect([moved.id, moved.status]).toEqual([id, 'waiting']);
    expect(await where(q, id, lanes)).toEqual({ s: 'waiting', waiting: true, delayed: false, lanes: { A: false, B: true, '': false } });
    const sq = Number((await raw(q, id)).sq);
    expect(await t.redis.zscore(k.waiting, id)).toBe(String((100 - 7) * 2 ** 44 + sq));
    // A longer maxWaitMs sends it back to delayed: out of its lane and of the waiting set.
    const back = await deb(q, { key: 'x', windowMs: 60_000, maxWaitMs: 120_000 }, { payload: { v: 4 } }, 'B');
    expect([back.id, back.status]).toEqual([id, 'delayed']);
    expect(await where(q, id, lanes)).toEqual({ s: 'delayed', waiting: false, delayed: true, lanes: { A: false, B: false, '': false } });
    expect(await t.redis.zcard(`${k.base}lane:B`)).toBe(0);
    // Made due again without a concurrency key: the unkeyed lane, field ck gone.
    const plain = await deb(q, { key: 'x', windowMs: 100, maxWaitMs: 100 }, { payload: { v: 5 } });
    expect(plain.status).toBe('waiting');
    expect(await where(q, id, lanes)).toEqual({ s: 'waiting', waiting: true, delayed: false, lanes: { A: false, B: false, '': true } });
    expect((await raw(q, id)).ck).toBeUndefined();
    // Claims still work through the ring (lanes A and B left empty behind): the job, then a keyed job of A.
    const other = (await t.store.enqueue([{ ...norm(q, { payload: { other: 1 } }), concurrencyKey: 'A' }]))[0].id;
    const c = await claim(q, 5);
    expect(c.jobs.map((j) => j.id).sort()).toEqual([id, other].sort());
    expect(c.jobs.find((j) => j.id === id)!.payload).toEqual({ v: 5 });
    expect(await t.redis.zcard(k.waiting)).toBe(0);
    expectLegal(await events(q));
  });

  it('a waiting job sent back to delayed is promoted again at its new runAt, into its lane', async () => {
    const q = newQueue();
    await t.stores.queues.configure(q, { fairness: 'round_robin', keyConcurrency: 1000 });
    const d = { key: 'x', windowMs: 150, maxWaitMs: 150 };
    const { id } = await deb(q, d, {}, 'K');
    await sleep(200);
    expect((await deb(q, d, { payload: { v: 2 } }, 'K')).status).toBe('waiting');
    expect(await where(q, id, ['K', ''])).toEqual({ s: 'waiting', waiting: true, delayed: false, lanes: { K: true, '': false } });
    const r = await deb(q, { key: 'x', windowMs: 150 }, { payload: { v: 3 } }, 'K');
    expect(r.status).toBe('delayed');
    expect(await where(q, id, ['K', ''])).toEqual({ s: 'delayed', waiting: false, delayed: true, lanes: { K: false, '': false } });
    expect((await claim(q)).jobs).toEqual([]);
    await sleep(r.created!.runAt - (await redisNow()) + 20);
    expect((await t.store.promoteDelayed(q, 10)).promoted).toBe(1);
    expect(await where(q, id, ['K', ''])).toEqual({ s: 'waiting', waiting: true, delayed: false, lanes: { K: true, '': false } });
    expect((await claim(q)).jobs.map((j) => [j.id, j.payload])).toEqual([[id, { v: 3 }]]);
    expect((await events(q, id)).map((e) => `${e.e}:${e.f}>${e.t}`)).toEqual([
      'enqueued:>delayed', 'debounced:delayed>waiting', 'debounced:waiting>delayed', 'promoted:delayed>waiting', 'claimed:waiting>active',
    ]);
  });
});

describe('when the key is free', () => {
  it('a cancelled job frees its key: the next enqueue creates a job', async () => {
    const q = newQueue();
    const d = { key: 'c', windowMs: 60_000 };
    const a = await deb(q, d, { payload: { v: 1 } });
    expect(await t.store.cancel(q, a.id)).toBe('cancelled');
    const b = await deb(q, d, { payload: { v: 2 } });
    expect(b.id).not.toBe(a.id);
    expect(b.debounced).toBeUndefined();
    expect((await raw(q, a.id)).s).toBe('cancelled');
    expect((await t.store.getJob(q, a.id))!.payload).toEqual({ v: 1 });
    // The new job holds the key now.
    const c = await deb(q, d, { payload: { v: 3 } });
    expect([c.id, c.debounced]).toEqual([b.id, true]);
  });

  it('a job claimed once and back in delayed (a retry) no longer holds its key', async () => {
    const q = newQueue();
    const d = { key: 'r', windowMs: 100 };
    const a = await deb(q, d, { maxAttempts: 3 });
    await sleep(150);
    const c = await claim(q);
    expect(c.jobs.map((j) => j.id)).toEqual([a.id]);
    expect(await t.store.fail(q, a.id, c.jobs[0].lockToken, { error: 'x', retryable: true, delayMs: 60_000, reason: 'error', workerId: 'w1' })).toBe('delayed');
    const b = await deb(q, d, { payload: { v: 2 } });
    expect(b.id).not.toBe(a.id);
    expect(b.debounced).toBeUndefined();
    expect((await t.store.getJob(q, a.id))!.payload).toEqual({});
  });

  it('a job deleted from Redis (or a key past its expiry) frees the key', async () => {
    const q = newQueue();
    const d = { key: 'gone', windowMs: 60_000 };
    const a = await deb(q, d);
    const dkey = `${t.keys(q).base}deb:gone`;
    // The key lives a day past the job's runAt (includes/debounce.lua).
    const ttl = await t.redis.pttl(dkey);
    expect(ttl).toBeGreaterThan(86_400_000 + 59_000);
    expect(ttl).toBeLessThanOrEqual(86_400_000 + 60_000);
    await t.redis.del(`${t.keys(q).base}job:${a.id}`);
    await t.redis.zrem(t.keys(q).delayed, a.id);
    const b = await deb(q, d);
    expect(b.id).not.toBe(a.id);
    expect(b.debounced).toBeUndefined();
    await t.redis.del(dkey);
    const c = await deb(q, d);
    expect(c.id).not.toBe(b.id);
  });

  it('a different key, or another queue, is another job', async () => {
    const q = newQueue();
    const q2 = newQueue();
    const a = await deb(q, { key: 'a', windowMs: 60_000 });
    const b = await deb(q, { key: 'b', windowMs: 60_000 });
    const a2 = await deb(q2, { key: 'a', windowMs: 60_000 });
    expect(new Set([a.id, b.id, a2.id]).size).toBe(3);
  });
});

describe('what an update changes', () => {
  it('type, payload and the options sent replace the old ones; options not sent go back to the defaults; id, createdAt and sequence stay', async () => {
    const q = newQueue();
    await t.stores.queues.configure(q, { defaults: { maxAttempts: 4, timeoutMs: 9000 } });
    const d = { key: 'o', windowMs: 60_000 };
    const backoff = { type: 'fixed' as const, delayMs: 10, maxDelayMs: 10, jitter: 'none' as const };
    const a = await deb(q, d, { type: 'first', payload: { big: 'x'.repeat(300) }, priority: 10, maxAttempts: 9, timeoutMs: 1234, backoff });
    const h0 = await raw(q, a.id);
    expect(h0.o).toBe(`9;1234;${encodeBackoff({ ...DEFAULT_BACKOFF, ...backoff })}`);
    expect(Number(h0.pn)).toBeGreaterThan(1);
    await sleep(5);
    const b = await deb(q, d, { type: 'second', payload: { small: 1 } });
    expect(b.id).toBe(a.id);
    const h = await raw(q, a.id);
    expect([h.ty, h.pr, h.o, h.ca, h.sq]).toEqual(['second', '0', `4;9000;${encodeBackoff(DEFAULT_BACKOFF)}`, h0.ca, h0.sq]);
    // The old payload chunks and their count are gone.
    expect(h.pn).toBeUndefined();
    expect(Object.keys(h).filter((f) => /^p\d+$/.test(f))).toEqual(['p0']);
    expect(b.created).toEqual({ createdAt: Number(h0.ca), runAt: Number(h.ra), maxAttempts: 4, timeoutMs: 9000, backoff: encodeBackoff(DEFAULT_BACKOFF), updatedAt: Number(h.ua) });
    expect(await t.store.getJob(q, a.id)).toMatchObject({ type: 'second', payload: { small: 1 }, priority: 0, maxAttempts: 4, timeoutMs: 9000 });
    const ev = (await events(q, a.id))[1];
    expect([ev.e, ev.f, ev.t, ev.ty, ev.p, ev.pr, ev.ra, ev.o]).toEqual(['debounced', 'delayed', 'delayed', 'second', '{"small":1}', '0', h.ra, h.o]);
  });

  it('the trace context is the last request\'s', async () => {
    const q = newQueue();
    const d = { key: 't', windowMs: 60_000 };
    const tp = '00-' + 'a'.repeat(32) + '-' + 'b'.repeat(16) + '-01';
    const [a] = await t.store.enqueue([debJob(q, d)], { traceparent: tp, tracestate: 'x=1' });
    expect([(await raw(q, a.id)).tp, (await raw(q, a.id)).ts]).toEqual([tp, 'x=1']);
    await t.store.enqueue([debJob(q, d)]);
    const h = await raw(q, a.id);
    expect([h.tp, h.ts]).toEqual([undefined, undefined]);
  });

  it('delayMs and runAt of a debounced job are ignored: the window decides', async () => {
    const q = newQueue();
    const r = await deb(q, { key: 'd', windowMs: 500 }, { delayMs: 3_600_000 });
    expect(r.created!.runAt - r.created!.createdAt).toBe(500);
  });
});

describe('one call, several jobs', () => {
  it('two jobs of one batch with the same key: the second updates the first', async () => {
    const q = newQueue();
    const d = { key: 'b', windowMs: 60_000 };
    const rs = await t.store.enqueue([debJob(q, d, { payload: { n: 1 } }), debJob(q, d, { payload: { n: 2 } }), debJob(q, { key: 'other', windowMs: 60_000 })]);
    expect(rs[1].id).toBe(rs[0].id);
    expect(rs.map((r) => r.debounced === true)).toEqual([false, true, false]);
    expect(rs[2].id).not.toBe(rs[0].id);
    expect((await t.store.getJob(q, rs[0].id))!.payload).toEqual({ n: 2 });
    expect((await events(q)).map((e) => e.e)).toEqual(['enqueued', 'debounced', 'enqueued']);
  });

  it('a resent call (reply lost on a reconnect) applies no update twice and answers as the first run did', async () => {
    const q = newQueue();
    const d = { key: 'resend', windowMs: 60_000 };
    await deb(q, d, { payload: { n: 0 } });
    let sent: { keys: string[]; args: (string | number)[] } | undefined;
    const run = t.scripts.run.bind(t.scripts);
    const spy = jest.spyOn(t.scripts, 'run').mockImplementation((name, keys, args) => {
      if (name === 'enqueueJobs') sent = { keys, args };
      return run(name, keys, args);
    });
    let first: EnqueueResult[];
    try {
      first = await t.store.enqueue([debJob(q, d, { payload: { n: 1 } }), debJob(q, { key: 'new', windowMs: 60_000 }, { payload: { n: 2 } })]);
    } finally {
      spy.mockRestore();
    }
    const k = t.keys(q);
    const snap = async () => ({
      hashes: await Promise.all(first.map((r) => raw(q, r.id))),
      delayed: await t.redis.zrange(k.delayed, 0, -1, 'WITHSCORES'),
      ev: await t.redis.xlen(k.events),
    });
    const before = await snap();
    await sleep(5);
    const again = await t.scripts.run<(string | number)[][]>('enqueueJobs', sent!.keys, sent!.args);
    expect(await snap()).toEqual(before);
    // The update answers again as an update (flag 2, with its updatedAt), the created job as replayed (flag 1).
    expect(again[0]).toEqual([1, first[0].id, 'delayed', 2, first[0].created!.createdAt, first[0].created!.runAt, before.hashes[0].o, first[0].created!.updatedAt, first[1].id, 'delayed', 1, '', '', '']);
  });
});

describe('refused or ignored', () => {
  it('debounce with an idempotency key is refused by the store, nothing written', async () => {
    const q = newQueue();
    await expect(t.store.enqueue([norm(q), debJob(q, { key: 'i', windowMs: 1000 }, { idempotencyKey: 'k' })])).rejects.toThrow(ValidationError);
    expect(await t.redis.exists(t.keys(q).events)).toBe(0);
  });

  it('the script ignores debounce on a job that carries an idempotency key', async () => {
    const q = newQueue();
    const k = t.keys(q);
    const job = (id: string) => [id, 't', '{}', 0, '', 0, '', '', '', 'idem', 'h1', '', '1000|2000|key', ''];
    const out = await t.scripts.run<unknown[][]>('enqueueJobs', [k.waiting, k.delayed, k.events, k.wake, k.meta], [k.base, 3, '', 1000, 60_000, 1, 2, ...job('id-a'), ...job('id-b')]);
    expect(out[0]).toEqual([1, 'id-a', 'waiting', 0, expect.any(Number), expect.any(Number), expect.any(String), 'id-a', 'waiting', 1, '', '', '']);
    expect(await t.redis.exists(`${k.base}deb:key`)).toBe(0);
    expect((await raw(q, 'id-a')).dk).toBeUndefined();
  });

  it('a malformed debounce field is refused before anything is written', async () => {
    const q = newQueue();
    const k = t.keys(q);
    for (const bad of ['x|1|k', '100|y|k', '100|', '100|200|', 'nope']) {
      await expect(
        t.scripts.run('enqueueJobs', [k.waiting, k.delayed, k.events, k.wake, k.meta], [k.base, 3, '', 1000, 1000, 1, 1, 'id-1', 't', '{}', 0, '', 0, '', '', '', '', '', '', bad]),
      ).rejects.toThrow(/malformed debounce/);
    }
    expect(await t.redis.exists(k.events, k.delayed, k.waiting, `${k.base}job:id-1`)).toBe(0);
  });

  it('while the queue is fenced (Redis restarted, not checked yet) no job is updated: the key goes to a new job', async () => {
    const q = newQueue();
    const d = { key: 'f', windowMs: 60_000 };
    const a = await deb(q, d, { payload: { v: 1 } });
    await t.redis.hset(t.keys(q).meta, 'vr', 'f'.repeat(40));
    const b = await deb(q, d, { payload: { v: 2 } });
    expect(b.id).not.toBe(a.id);
    expect((await t.store.getJob(q, a.id))!.payload).toEqual({ v: 1 });
    await t.redis.hdel(t.keys(q).meta, 'vr');
    const c = await deb(q, d, { payload: { v: 3 } });
    expect([c.id, c.debounced]).toEqual([b.id, true]);
  });
});
