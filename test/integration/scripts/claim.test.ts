/**
 * claimJobs-8.lua through RedisJobStore.claim, on real Redis: ordering,
 * limits (pause, maxConcurrency, rate limit, external queues), corrupted
 * jobs, stale set entries and contention.
 */
import type { EnqueueInput } from '../../../src/core/job-options';
import { createRedis, RedisClient } from '../../../src/redis/connection';
import type { RedisJobStore } from '../../../src/redis/stores/job-store';
import { createRedisStores } from '../../../src/redis/stores';
import { openStore, REDIS_URL, sleep, TestStore } from '../../support/redis';
import { efta, expectLegal, ids, scriptHelpers } from '../../support/scripts';

let t: TestStore;
const extraClients: RedisClient[] = [];
beforeAll(async () => {
  t = await openStore('claim');
});
afterAll(async () => {
  for (const c of extraClients) c.disconnect();
  await t.close();
});

// ---- helpers (each test uses its own queue, so sets and events are its own) ----
const { queues, newQueue, norm, enq, events, jk, raw, redisNow } = scriptHelpers(() => t, 'claim');
async function enqMany(q: string, n: number, input: Partial<EnqueueInput> = {}): Promise<string[]> {
  return (await t.store.enqueue(Array.from({ length: n }, (_, i) => norm(q, { payload: { i }, ...input })))).map((r) => r.id);
}
/** A second store on its own connection, same prefix: another worker process. */
function otherStore(): RedisJobStore {
  const redis = createRedis({ redisUrl: REDIS_URL, redisClusterNodes: null });
  extraClients.push(redis);
  return createRedisStores(redis, t.prefix).jobs;
}

describe('claim: happy path', () => {
  it('moves a waiting job to active under a fresh lease with one claimed event', async () => {
    const q = newQueue();
    const id = await enq(q, { type: 'send', payload: { a: 1 }, maxAttempts: 4 });
    const before = await redisNow();
    const c = await t.store.claim(q, 1, 5000, 'worker-1');
    const after = await redisNow();
    expect(c.block).toBe('none');
    expect(c.retryInMs).toBe(-1);
    expect(c.jobs).toHaveLength(1);
    const j = c.jobs[0];
    expect(j).toMatchObject({ id, queue: q, type: 'send', payload: { a: 1 }, status: 'active', attempts: 1, maxAttempts: 4, executionSeq: 1, workerId: 'worker-1', cancelRequested: false });
    expect(j.startedAt).toBeGreaterThanOrEqual(before);
    expect(j.startedAt).toBeLessThanOrEqual(after);
    expect(j.leaseExpiresAt).toBe(j.startedAt! + 5000);
    expect(j.updatedAt).toBe(j.startedAt);
    expect(j.lockToken).toEqual(expect.any(String));
    expect(j.lockToken.length).toBeGreaterThanOrEqual(16);

    const k = t.keys(q);
    expect(await t.redis.zscore(k.active, id)).toBe(String(j.leaseExpiresAt));
    expect(await t.redis.zcard(k.waiting)).toBe(0);
    const h = await raw(q, id);
    expect(h).toMatchObject({ s: 'active', lt: j.lockToken, w: 'worker-1' });
    expect(await t.store.getJob(q, id)).toMatchObject({ status: 'active', attempts: 1, workerId: 'worker-1' });

    const ev = await events(q, id);
    expect(efta(ev)).toEqual([
      ['enqueued', '', 'waiting', 0],
      ['claimed', 'waiting', 'active', 1],
    ]);
    expect(ev[1]).toMatchObject({ x: '1', w: 'worker-1', at: String(j.startedAt) });
  });

  it('claims at most max jobs, each with its own token', async () => {
    const q = newQueue();
    await enqMany(q, 5);
    const c1 = await t.store.claim(q, 3, 5000, 'w');
    expect(c1.jobs).toHaveLength(3);
    expect(c1.retryInMs).toBe(-1);
    const c2 = await t.store.claim(q, 10, 5000, 'w');
    expect(c2.jobs).toHaveLength(2);
    const tokens = [...c1.jobs, ...c2.jobs].map((j) => j.lockToken);
    expect(new Set(tokens).size).toBe(5);
    expect((await t.store.claim(q, 10, 5000, 'w')).jobs).toHaveLength(0);
    expect(await events(q)).toHaveLength(10);
  });

  it('an empty queue returns no jobs, block none, retryInMs -1', async () => {
    const q = newQueue();
    expect(await t.store.claim(q, 5, 1000, 'w')).toEqual({ jobs: [], block: 'none', retryInMs: -1 });
  });

  it('a drained queue hints when its next delayed job is due', async () => {
    const q = newQueue();
    await enq(q, { delayMs: 5000 });
    const c = await t.store.claim(q, 5, 1000, 'w');
    expect(c.jobs).toHaveLength(0);
    expect(c.retryInMs).toBeGreaterThan(4000);
    expect(c.retryInMs).toBeLessThanOrEqual(5000);
  });

  it('promotes due delayed jobs first (promoted, then claimed)', async () => {
    const q = newQueue();
    const id = await enq(q, { delayMs: 100 });
    expect((await t.store.claim(q, 1, 1000, 'w')).jobs).toHaveLength(0);
    await sleep(150);
    const c = await t.store.claim(q, 1, 1000, 'w');
    expect(ids(c)).toEqual([id]);
    expect(efta(await events(q, id))).toEqual([
      ['enqueued', '', 'delayed', 0],
      ['promoted', 'delayed', 'waiting', 0],
      ['claimed', 'waiting', 'active', 1],
    ]);
  });
});

describe('claim: ordering', () => {
  it('runs higher priorities first (C20: 10, 5, 3, 2, 0)', async () => {
    const q = newQueue();
    const p5 = await enq(q, { priority: 5 });
    const p3 = await enq(q, { priority: 3 });
    const p0 = await enq(q);
    const p2 = await enq(q, { priority: 2 });
    const p10 = await enq(q, { priority: 10 });
    const order: string[] = [];
    for (let i = 0; i < 5; i++) order.push(...ids(await t.store.claim(q, 1, 5000, 'w')));
    expect(order).toEqual([p10, p5, p3, p2, p0]);
  });

  it('extremes and named priorities: 100, high, normal, low, -100', async () => {
    const q = newQueue();
    const lo = await enq(q, { priority: -100 });
    const low = await enq(q, { priority: 'low' });
    const normal = await enq(q, { priority: 'normal' });
    const high = await enq(q, { priority: 'high' });
    const hi = await enq(q, { priority: 100 });
    expect(ids(await t.store.claim(q, 10, 5000, 'w'))).toEqual([hi, high, normal, low, lo]);
  });

  it('is FIFO within a priority, also when priorities interleave', async () => {
    const q = newQueue();
    const a: string[] = [];
    const b: string[] = [];
    for (let i = 0; i < 30; i++) {
      a.push(await enq(q, { priority: 1, payload: { i } }));
      b.push(await enq(q, { priority: 0, payload: { i } }));
    }
    const got: string[] = [];
    for (let i = 0; i < 12; i++) got.push(...ids(await t.store.claim(q, 5, 5000, 'w')));
    expect(got).toEqual([...a, ...b]);
  });

  it('a job requeued by the reaper (stalled) keeps its original place (C20)', async () => {
    const q = newQueue();
    const [first, ...rest] = await enqMany(q, 4);
    const c = await t.store.claim(q, 1, 100, 'w-dead');
    expect(ids(c)).toEqual([first]);
    await sleep(150);
    expect((await t.store.reapExpired(q, 10)).reaped).toBe(1);
    // It comes first again, and alone (its lease expired: it may crash workers).
    const again = await t.store.claim(q, 10, 5000, 'w');
    expect(ids(again)).toEqual([first]);
    expect(again.block).toBe('solo');
    expect(ids(await t.store.claim(q, 10, 5000, 'w'))).toEqual(rest);
  });

  it('a stalled job runs alone: a busy worker is told to drain (isolate), an idle one gets it solo', async () => {
    const q = newQueue();
    const [first, ...rest] = await enqMany(q, 4);
    expect(ids(await t.store.claim(q, 1, 100, 'w-dead'))).toEqual([first]);
    await sleep(150);
    expect((await t.store.reapExpired(q, 10)).reaped).toBe(1);
    const busy = await t.store.claimForWorker(q, 10, 5000, 'w-busy', false);
    expect(busy.jobs).toEqual([]);
    expect(busy.block).toBe('isolate');
    // Nothing was lost or reordered by the refusal.
    expect(await t.redis.zrange(t.keys(q).waiting, 0, -1)).toEqual([first, ...rest]);
    const idle = await t.store.claimForWorker(q, 10, 5000, 'w-idle', true);
    expect(idle.jobs.map((j) => j.id)).toEqual([first]);
    expect(idle.block).toBe('solo');
    // Jobs before a suspect are claimed normally; the claim stops at it.
    const q2 = newQueue();
    const [x1, x2] = await enqMany(q2, 2);
    expect(ids(await t.store.claim(q2, 1, 5000, 'w'))).toEqual([x1]);
    await t.redis.hset(t.keys(q2).base + 'job:' + x2, 'iso', 1);
    const y = await enqMany(q2, 1);
    const part = await t.store.claimForWorker(q2, 10, 5000, 'w-busy', false);
    expect(part.jobs).toEqual([]);
    expect(part.block).toBe('isolate');
    expect(await t.redis.zrange(t.keys(q2).waiting, 0, -1)).toEqual([x2, ...y]);
  });

  it('a released job keeps its original place', async () => {
    const q = newQueue();
    const all = await enqMany(q, 4);
    const c = await t.store.claim(q, 2, 5000, 'w');
    expect(await t.store.release(q, 'w', c.jobs.map((j) => ({ id: j.id, lockToken: j.lockToken })))).toEqual(['released', 'released']);
    expect(ids(await t.store.claim(q, 10, 5000, 'w'))).toEqual(all);
  });

  it('a job retried without backoff delay keeps its original place', async () => {
    const q = newQueue();
    const all = await enqMany(q, 3);
    const c = await t.store.claim(q, 1, 5000, 'w');
    expect(await t.store.fail(q, all[0], c.jobs[0].lockToken, { error: 'x', retryable: true, delayMs: 0, reason: 'error', workerId: 'w' })).toBe('waiting');
    expect(ids(await t.store.claim(q, 10, 5000, 'w'))).toEqual(all);
  });
});

describe('claim: pause', () => {
  it('a paused queue starts nothing, still accepts jobs, and resumes', async () => {
    const q = newQueue();
    const k = t.keys(q);
    const before = await enq(q);
    await t.stores.queues.configure(q, { paused: true });
    const during = await enq(q);
    const delayed = await enq(q, { delayMs: 50 });
    await sleep(80);
    const eventsBefore = await t.redis.xlen(k.events);
    const c = await t.store.claim(q, 10, 5000, 'w');
    expect(c).toEqual({ jobs: [], block: 'paused', retryInMs: -1 });
    // The due delayed job was promoted (it is waiting, "also while paused"); nothing was claimed.
    const ev = (await events(q)).slice(eventsBefore);
    expect(efta(ev)).toEqual([['promoted', 'delayed', 'waiting', 0]]);
    for (const id of [before, during, delayed]) expect((await t.store.getJob(q, id))!.status).toBe('waiting');
    expect(await t.redis.zcard(k.active)).toBe(0);
    expect(await t.redis.exists(k.wake)).toBe(0);

    await t.stores.queues.configure(q, { paused: false });
    expect(await t.redis.llen(k.wake)).toBeGreaterThan(0);
    expect(ids(await t.store.claim(q, 10, 5000, 'w')).sort()).toEqual([before, during, delayed].sort());
  });
});

describe('claim: maxConcurrency', () => {
  it('caps active jobs across two claimers', async () => {
    const q = newQueue();
    const w2 = otherStore();
    await enqMany(q, 6);
    await t.stores.queues.configure(q, { maxConcurrency: 2 });
    const c1 = await t.store.claim(q, 5, 5000, 'w1');
    expect(c1.jobs).toHaveLength(2);
    const c2 = await w2.claim(q, 5, 5000, 'w2');
    expect(c2).toEqual({ jobs: [], block: 'concurrency', retryInMs: -1 });

    expect(await t.store.complete(q, 'w1', [{ id: c1.jobs[0].id, lockToken: c1.jobs[0].lockToken, result: null }])).toEqual(['completed']);
    const c3 = await w2.claim(q, 5, 5000, 'w2');
    expect(c3.jobs).toHaveLength(1);
    expect((await t.store.claim(q, 5, 5000, 'w1')).block).toBe('concurrency');
    expect(await t.redis.zcard(t.keys(q).active)).toBe(2);

    await t.stores.queues.configure(q, { maxConcurrency: null });
    expect((await w2.claim(q, 5, 5000, 'w2')).jobs).toHaveLength(3);
  });

  it('holds under concurrent claims from many connections', async () => {
    const q = newQueue();
    const stores = [t.store, otherStore(), otherStore(), otherStore()];
    await enqMany(q, 50);
    await t.stores.queues.configure(q, { maxConcurrency: 3 });
    const results = await Promise.all(stores.flatMap((s, i) => Array.from({ length: 5 }, () => s.claim(q, 2, 5000, `w${i}`))));
    expect(results.reduce((n, r) => n + r.jobs.length, 0)).toBe(3);
    expect(await t.redis.zcard(t.keys(q).active)).toBe(3);
  });
});

describe('claim: rate limit', () => {
  it('caps job starts per window across claimers and says when to retry', async () => {
    const q = newQueue();
    const w2 = otherStore();
    await enqMany(q, 10);
    await t.stores.queues.configure(q, { rateLimit: { max: 3, durationMs: 400 } });
    const c1 = await t.store.claim(q, 2, 5000, 'w1');
    expect(c1.jobs).toHaveLength(2);
    const c2 = await w2.claim(q, 5, 5000, 'w2');
    expect(c2.jobs).toHaveLength(1);
    const c3 = await w2.claim(q, 5, 5000, 'w2');
    expect(c3.jobs).toHaveLength(0);
    expect(c3.block).toBe('rate_limited');
    expect(c3.retryInMs).toBeGreaterThan(0);
    expect(c3.retryInMs).toBeLessThanOrEqual(400);
    // Completing jobs does not refund starts.
    await t.store.complete(q, 'w1', c1.jobs.map((j) => ({ id: j.id, lockToken: j.lockToken, result: null })));
    expect((await t.store.claim(q, 5, 5000, 'w1')).block).toBe('rate_limited');

    await sleep(c3.retryInMs + 30);
    const c4 = await t.store.claim(q, 10, 5000, 'w1');
    expect(c4.block).toBe('none');
    expect(c4.jobs).toHaveLength(3);

    await t.stores.queues.configure(q, { rateLimit: null });
    expect((await t.store.claim(q, 10, 5000, 'w1')).jobs).toHaveLength(4);
  });

  it('an empty claim does not use up the window', async () => {
    const q = newQueue();
    await t.stores.queues.configure(q, { rateLimit: { max: 1, durationMs: 10_000 } });
    for (let i = 0; i < 3; i++) expect((await t.store.claim(q, 5, 5000, 'w')).block).toBe('none');
    await enq(q);
    expect((await t.store.claim(q, 5, 5000, 'w')).jobs).toHaveLength(1);
    const k = t.keys(q);
    expect(await t.redis.pttl(k.rateLimit)).toBeGreaterThan(9000);
  });
});

describe('claim: external queues', () => {
  it('in-process claims are blocked; external claims get the jobs', async () => {
    const q = newQueue();
    const id = await enq(q, { type: 'any.type' });
    await t.stores.queues.configure(q, { external: true });
    expect(await t.store.claim(q, 5, 5000, 'in-proc')).toEqual({ jobs: [], block: 'external', retryInMs: -1 });
    expect((await t.store.getJob(q, id))!.status).toBe('waiting');
    expect(await events(q, id)).toHaveLength(1);
    const c = await t.store.claim(q, 5, 5000, 'ext-worker', true);
    expect(c.block).toBe('none');
    expect(ids(c)).toEqual([id]);
    expect(c.jobs[0].workerId).toBe('ext-worker');
  });

  it('pause applies to external claims too', async () => {
    const q = newQueue();
    await enq(q);
    await t.stores.queues.configure(q, { external: true, paused: true });
    expect((await t.store.claim(q, 5, 5000, 'ext', true)).block).toBe('paused');
    await t.stores.queues.configure(q, { external: false, paused: false });
    expect((await t.store.claim(q, 5, 5000, 'in-proc')).jobs).toHaveLength(1);
  });
});

/** Ways to corrupt a job hash by hand, with the decode error each must produce. */
function corruptionCases(): [string, (q: string, id: string) => Promise<unknown>, RegExp][] {
  return [
    ["state 's' set to garbage", (q, id) => t.redis.hset(jk(q, id), 's', 'garbage'), /^decode error: unknown state/],
    ["state 's' deleted", (q, id) => t.redis.hdel(jk(q, id), 's'), /^decode error: state missing/],
    ["type 'ty' deleted", (q, id) => t.redis.hdel(jk(q, id), 'ty'), /^decode error: .*\bty\b/],
    ["payload chunk 'p0' not JSON", (q, id) => t.redis.hset(jk(q, id), 'p0', '{not json'), /^decode error: .*not JSON/],
    ['key replaced by a string', (q, id) => t.redis.multi().del(jk(q, id)).set(jk(q, id), 'garbage').exec(), /^decode error: .*WRONGTYPE/],
    ["packed options 'o' garbage", (q, id) => t.redis.hset(jk(q, id), 'o', 'nonsense'), /^decode error: .*(option|backoff)/],
  ];
}

describe('claim: corrupted job hashes go to the DLQ with a decode error', () => {
  const corruptions = corruptionCases();

  it.each(corruptions)('%s: dead-lettered, the other jobs of the same claim are returned', async (_name, corrupt, why) => {
    const q = newQueue();
    const [a, bad, c] = await enqMany(q, 3);
    await corrupt(q, bad);
    const r = await t.store.claim(q, 10, 5000, 'w');
    expect(ids(r)).toEqual([a, c]);
    expect(r.block).toBe('none');

    const k = t.keys(q);
    expect(await t.redis.zscore(k.failed, bad)).not.toBeNull();
    expect(await t.redis.zscore(k.waiting, bad)).toBeNull();
    expect(await t.redis.zscore(k.active, bad)).toBeNull();
    const h = await raw(q, bad);
    expect(h.s).toBe('failed');
    expect(h.e).toMatch(why);
    expect(h.lt).toBeUndefined();
    expect(h.fa).toEqual(expect.any(String));

    const ev = await events(q, bad);
    const failed = ev.filter((e) => e.e === 'failed');
    expect(failed).toHaveLength(1);
    expect(failed[0]).toMatchObject({ t: 'failed', r: 'decode_error', er: h.e });
    expect(ev[ev.length - 1]).toBe(failed[0]);
    expectLegal(ev);
    // The good jobs are untouched by their neighbour's fate.
    expect(await t.store.complete(q, 'w', r.jobs.map((j) => ({ id: j.id, lockToken: j.lockToken, result: 1 })))).toEqual(['completed', 'completed']);
  });

  it('all kinds at once, interleaved with good jobs, in one claim', async () => {
    const q = newQueue();
    const all = await enqMany(q, corruptions.length * 2 + 1);
    const good = all.filter((_, i) => i % 2 === 0);
    const bad = all.filter((_, i) => i % 2 === 1);
    for (const [i, [, corrupt]] of corruptions.entries()) await corrupt(q, bad[i]);
    const r = await t.store.claim(q, 100, 5000, 'w');
    expect(ids(r)).toEqual(good);
    expect((await t.redis.zrange(t.keys(q).failed, 0, -1)).sort()).toEqual([...bad].sort());
    for (const id of bad) expect((await raw(q, id)).e).toMatch(/^decode error/);
  });

  it("a garbage state dead-lettered in the script still reads back as a failed job with lastError", async () => {
    const q = newQueue();
    const id = await enq(q, { payload: { keep: true } });
    await t.redis.hset(jk(q, id), 's', '???');
    await t.store.claim(q, 1, 5000, 'w');
    const j = await t.store.getJob(q, id);
    expect(j).toMatchObject({ status: 'failed', payload: { keep: true }, attempts: 0 });
    expect(j!.lastError).toMatch(/^decode error: unknown state/);
    expect(efta(await events(q, id))).toEqual([
      ['enqueued', '', 'waiting', 0],
      ['failed', 'waiting', 'failed', 0],
    ]);
  });
});

describe('claimForWorker (lean reply)', () => {
  it('returns exactly what a worker needs, with the same transition as claim', async () => {
    const q = newQueue();
    const backoff = { type: 'linear' as const, delayMs: 5, maxDelayMs: 50, jitter: 'full' as const };
    const id = await enq(q, { type: 'img.resize', payload: { w: 100, s: 'é😀'.repeat(40) }, maxAttempts: 4, timeoutMs: 777, backoff });
    const r = await t.store.claimForWorker(q, 5, 5000, 'lean-w');
    expect(r.block).toBe('none');
    expect(r.jobs).toEqual([
      {
        id,
        type: 'img.resize',
        payload: { w: 100, s: 'é😀'.repeat(40) },
        attempts: 1,
        maxAttempts: 4,
        backoff,
        timeoutMs: 777,
        executionSeq: 1,
        dependencies: [],
        lockToken: expect.any(String),
        leaseExpiresAt: expect.any(Number),
        traceparent: null,
        tracestate: null,
      },
    ]);
    const j = (await t.store.getJob(q, id))!;
    expect(j).toMatchObject({ status: 'active', workerId: 'lean-w', attempts: 1 });
    expect(r.jobs[0].leaseExpiresAt).toBe(j.startedAt! + 5000);
    expect(await t.redis.zscore(t.keys(q).active, id)).toBe(String(r.jobs[0].leaseExpiresAt));
    expect(efta(await events(q, id))).toEqual([
      ['enqueued', '', 'waiting', 0],
      ['claimed', 'waiting', 'active', 1],
    ]);
    expect(await t.store.complete(q, 'lean-w', [{ id, lockToken: r.jobs[0].lockToken, result: 1 }])).toEqual(['completed']);
  });

  it('honours pause and never claims from an external queue', async () => {
    const q = newQueue();
    await enq(q);
    await t.stores.queues.configure(q, { paused: true });
    expect(await t.store.claimForWorker(q, 5, 5000, 'w')).toEqual({ jobs: [], block: 'paused', retryInMs: -1 });
    await t.stores.queues.configure(q, { paused: false, external: true });
    expect(await t.store.claimForWorker(q, 5, 5000, 'w')).toEqual({ jobs: [], block: 'external', retryInMs: -1 });
  });

  it.each(corruptionCases())('%s: dead-lettered, the other jobs are returned', async (_name, corrupt) => {
    const q = newQueue();
    const [a, bad, c] = await enqMany(q, 3);
    await corrupt(q, bad);
    const r = await t.store.claimForWorker(q, 10, 5000, 'w');
    expect(ids(r)).toEqual([a, c]);
    const k = t.keys(q);
    expect(await t.redis.zscore(k.failed, bad)).not.toBeNull();
    expect(await t.redis.zscore(k.active, bad)).toBeNull();
    const h = await raw(q, bad);
    expect(h.s).toBe('failed');
    expect(h.e).toMatch(/^decode error/);
    expect((await events(q, bad)).filter((e) => e.e === 'failed')).toHaveLength(1);
  });
});

describe('claim: stale entries in the waiting set (refusals)', () => {
  it('drops an id whose job no longer exists, without an event', async () => {
    const q = newQueue();
    const k = t.keys(q);
    await t.redis.zadd(k.waiting, 1, 'no-such-job');
    const good = await enq(q);
    const evBefore = await t.redis.xlen(k.events);
    const r = await t.store.claim(q, 10, 5000, 'w');
    expect(ids(r)).toEqual([good]);
    expect(await t.redis.xlen(k.events)).toBe(evBefore + 1);
    expect(await t.redis.exists(jk(q, 'no-such-job'))).toBe(0);
    expect(await t.redis.zcard(k.failed)).toBe(0);
  });

  it('drops an id whose job is in another valid state (wrong state), leaving the job alone', async () => {
    const q = newQueue();
    const k = t.keys(q);
    const [done, good] = await enqMany(q, 2);
    const c = await t.store.claim(q, 1, 5000, 'w');
    await t.store.complete(q, 'w', [{ id: done, lockToken: c.jobs[0].lockToken, result: 'r' }]);
    const hashBefore = await raw(q, done);
    await t.redis.zadd(k.waiting, 0, done);
    const evBefore = await t.redis.xlen(k.events);
    expect(ids(await t.store.claim(q, 10, 5000, 'w'))).toEqual([good]);
    expect(await raw(q, done)).toEqual(hashBefore);
    expect(efta((await events(q)).slice(evBefore))).toEqual([['claimed', 'waiting', 'active', 1]]);
  });
});

describe('claim: wake list', () => {
  it('a claim that drains the queue clears the wake list; one that leaves jobs passes a wake-up on', async () => {
    const q = newQueue();
    const k = t.keys(q);
    await enqMany(q, 3);
    expect(await t.redis.llen(k.wake)).toBe(1);
    await t.store.claim(q, 1, 5000, 'w');
    // Jobs remain: the claim hands a token on so another idle worker wakes now.
    expect(await t.redis.llen(k.wake)).toBeGreaterThanOrEqual(1);
    await t.store.claim(q, 5, 5000, 'w');
    expect(await t.redis.exists(k.wake)).toBe(0);
  });
});

describe('claim: contention', () => {
  it('10 concurrent claim loops on separate connections claim every job exactly once', async () => {
    const q = newQueue();
    const all = await enqMany(q, 300);
    const stores = [t.store, ...Array.from({ length: 9 }, () => otherStore())];
    const claimed: string[] = [];
    await Promise.all(
      stores.map(async (s, i) => {
        for (;;) {
          const r = await s.claim(q, 7, 30_000, `w${i}`);
          if (r.jobs.length === 0) return;
          claimed.push(...ids(r));
          await s.complete(q, `w${i}`, r.jobs.map((j) => ({ id: j.id, lockToken: j.lockToken, result: i })));
        }
      }),
    );
    expect(claimed).toHaveLength(300);
    expect(new Set(claimed)).toEqual(new Set(all));
    const ev = await events(q);
    expect(ev.filter((e) => e.e === 'claimed')).toHaveLength(300);
    expect(ev.filter((e) => e.e === 'completed')).toHaveLength(300);
  });
});

describe('claim: audit trail', () => {
  it('every event written in this file is an allowed transition', async () => {
    for (const q of queues) expectLegal(await events(q));
  });
});

describe('trace context (job hash fields tp, ts)', () => {
  const tp = (n: number) => `00-${String(n).repeat(32)}-${String(n).repeat(16)}-01`;

  it('requests coalesced into one script call keep their own context; lean and full claims return it', async () => {
    const q = newQueue();
    await enq(q); // registers the queue, so the requests below are submitted in the same turn
    await t.store.claim(q, 1, 5000, 'w');
    const groups: number[] = [];
    const run = t.scripts.run.bind(t.scripts);
    const spy = jest.spyOn(t.scripts, 'run').mockImplementation((name, keys, args) => {
      if (name === 'enqueueJobs') groups.push(Number(args[5]));
      return run(name, keys, args);
    });
    // Same event-loop turn: one enqueueJobs call with four groups (group commit).
    const [a, b, c, d] = await Promise.all([
      t.store.enqueue([norm(q, { payload: { i: 0 } })], { traceparent: tp(1), tracestate: 'rojo=1' }),
      t.store.enqueue([norm(q, { payload: { i: 1 } }), norm(q, { payload: { i: 2 } })], { traceparent: tp(2), tracestate: null }),
      t.store.enqueue([norm(q, { payload: { i: 3 } })]),
      t.store.enqueue([norm(q, { payload: { i: 4 }, idempotencyKey: 'k', delayMs: 0 })], { traceparent: tp(3), tracestate: 'a=1,b=2' }),
    ]).finally(() => spy.mockRestore());
    expect(groups).toEqual([4]);
    const want = new Map<string, [string | null, string | null]>([
      [a[0].id, [tp(1), 'rojo=1']],
      [b[0].id, [tp(2), null]],
      [b[1].id, [tp(2), null]],
      [c[0].id, [null, null]],
      [d[0].id, [tp(3), 'a=1,b=2']],
    ]);
    for (const [id, [p, st]] of want) {
      const h = await raw(q, id);
      expect([h.tp ?? null, h.ts ?? null]).toEqual([p, st]);
    }
    const lean = await t.store.claimForWorker(q, 3, 5000, 'w');
    const full = await t.store.claim(q, 3, 5000, 'w');
    expect(lean.jobs.length + full.jobs.length).toBe(5);
    for (const j of [...lean.jobs, ...full.jobs]) expect([j.traceparent, j.tracestate]).toEqual(want.get(j.id));
  });

  it('refuses a malformed group entry before writing anything', async () => {
    const q = newQueue();
    const k = t.keys(q);
    await expect(
      t.scripts.run('enqueueJobs', [k.waiting, k.delayed, k.events, k.wake, k.meta], [k.base, 3, '', 1000, 1000, 1, 'x\n' + tp(1), 'id-1', 't', '{}', 0, '', 0, '', '', '', '', '', '', '', '']),
    ).rejects.toThrow(/malformed group entry/);
    expect(await t.redis.zcard(k.waiting)).toBe(0);
  });
});
