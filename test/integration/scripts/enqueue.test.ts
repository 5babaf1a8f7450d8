/**
 * enqueueJobs-5.lua through RedisJobStore.enqueue, on real Redis.
 */
import { DEFAULT_BACKOFF, encodeBackoff } from '../../../src/core/backoff';
import { IdempotencyConflictError } from '../../../src/core/errors';
import type { EnqueueInput } from '../../../src/core/job-options';
import { createRedis } from '../../../src/redis/connection';
import { createRedisStores } from '../../../src/redis/stores';
import { openStore, REDIS_URL, sleep, TestStore } from '../../support/redis';
import { efta, expectLegal, scriptHelpers } from '../../support/scripts';

let t: TestStore;
beforeAll(async () => {
  t = await openStore('enqueue');
});
afterAll(async () => t.close());

// ---- helpers (each test uses its own queue, so sets and events are its own) ----
const BIG = 20 * 1024 * 1024;
const { newQueue, norm, events, redisNow } = scriptHelpers(() => t, 'enq', { maxPayloadBytes: BIG });
/** Enqueues one job; returns the whole result (id, status, replayed). */
async function enq(q: string, input: Partial<EnqueueInput> = {}) {
  const [r] = await t.store.enqueue([norm(q, input)]);
  return r;
}
/** Every key, set size and stream length of a queue: "nothing written" means this is unchanged. */
async function queueState(q: string) {
  const k = t.keys(q);
  const keys = (await t.redis.keys(`${k.base}*`)).sort();
  const [w, d, ev, meta] = await Promise.all([t.redis.zcard(k.waiting), t.redis.zcard(k.delayed), t.redis.xlen(k.events), t.redis.hgetall(k.meta)]);
  return { keys, w, d, ev, meta };
}
const SEQ_SPAN = 2 ** 44;
const UUID_V7 = /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

describe('enqueue: happy path', () => {
  it('writes a waiting job with its full spec, one score in waiting and exactly one enqueued event', async () => {
    const q = newQueue();
    const before = await redisNow();
    const input = {
      type: 'send_email',
      payload: { to: 'a@b.c', n: [1, 2, 3] },
      priority: 7,
      maxAttempts: 5,
      backoff: { type: 'fixed' as const, delayMs: 10, maxDelayMs: 20, jitter: 'full' as const },
      timeoutMs: 1234,
      idempotencyKey: 'key-1',
    };
    const r = await enq(q, input);
    const after = await redisNow();
    expect(r).toEqual({
      id: expect.stringMatching(UUID_V7),
      status: 'waiting',
      replayed: false,
      // What the script resolved, so the API can answer without reading the job back.
      created: { createdAt: expect.any(Number), runAt: expect.any(Number), maxAttempts: 5, timeoutMs: 1234, backoff: 'fixed|10|20|full' },
    });
    expect(r.created!.runAt).toBe(r.created!.createdAt);

    const j = await t.store.getJob(q, r.id);
    expect(j).toEqual({
      id: r.id,
      queue: q,
      type: 'send_email',
      payload: input.payload,
      status: 'waiting',
      priority: 7,
      attempts: 0,
      maxAttempts: 5,
      backoff: input.backoff,
      timeoutMs: 1234,
      idempotencyKey: 'key-1',
      concurrencyKey: null,
      flowId: null,
      flowRef: null,
      progress: null,
      result: null,
      lastError: null,
      workerId: null,
      createdAt: expect.any(Number),
      runAt: j?.createdAt,
      startedAt: null,
      finishedAt: null,
      updatedAt: j?.createdAt,
      executionSeq: 0,
      cancelRequested: false,
    });
    expect(j!.createdAt).toBeGreaterThanOrEqual(before);
    expect(j!.createdAt).toBeLessThanOrEqual(after);

    const k = t.keys(q);
    expect(await t.redis.zrange(k.waiting, 0, -1, 'WITHSCORES')).toEqual([r.id, String((100 - 7) * SEQ_SPAN + 1)]);
    expect(await t.redis.zcard(k.delayed)).toBe(0);
    expect(await t.redis.hget(k.meta, 'seq')).toBe('1');

    const ev = await events(q);
    expect(ev).toHaveLength(1);
    expect(ev[0]).toEqual({
      streamId: expect.any(String),
      e: 'enqueued',
      j: r.id,
      f: '',
      t: 'waiting',
      a: '0',
      at: String(j!.createdAt),
      ty: 'send_email',
      p: JSON.stringify(input.payload),
      pr: '7',
      o: `5;1234;${encodeBackoff(input.backoff)}`,
      ik: 'key-1',
      ra: String(j!.createdAt),
    });
    expectLegal(ev);
  });

  it('registers the queue name in the global registry', async () => {
    const q = newQueue();
    await enq(q);
    expect(await t.stores.queues.list()).toContain(q);
  });

  it('gives each job a distinct UUIDv7 id and increasing sequence numbers', async () => {
    const q = newQueue();
    const rs = await t.store.enqueue(Array.from({ length: 20 }, () => norm(q)));
    expect(new Set(rs.map((r) => r.id)).size).toBe(20);
    for (const r of rs) expect(r.id).toMatch(UUID_V7);
    const k = t.keys(q);
    const scores = await Promise.all(rs.map((r) => t.redis.zscore(k.waiting, r.id)));
    expect(scores).toEqual(rs.map((_, i) => String(100 * SEQ_SPAN + i + 1)));
    expect(efta(await events(q))).toEqual(rs.map(() => ['enqueued', '', 'waiting', 0]));
  });
});

describe('enqueue: defaults', () => {
  it('applies the process defaults when neither job nor queue sets them', async () => {
    const q = newQueue();
    const j = await t.store.getJob(q, (await enq(q)).id);
    expect(j).toMatchObject({ maxAttempts: 3, backoff: DEFAULT_BACKOFF, timeoutMs: 600_000, priority: 0, payload: {}, idempotencyKey: null });
  });

  it("applies the queue's defaults, read at enqueue time, and the job's own options win", async () => {
    const q = newQueue();
    const qBackoff = { type: 'linear' as const, delayMs: 7, maxDelayMs: 70, jitter: 'none' as const };
    await t.stores.queues.configure(q, { defaults: { maxAttempts: 9, backoff: qBackoff, timeoutMs: 4321 } });
    const fromQueue = await t.store.getJob(q, (await enq(q)).id);
    expect(fromQueue).toMatchObject({ maxAttempts: 9, backoff: qBackoff, timeoutMs: 4321 });

    const own = { type: 'fixed' as const, delayMs: 1, maxDelayMs: 1, jitter: 'equal' as const };
    const fromJob = await t.store.getJob(q, (await enq(q, { maxAttempts: 2, backoff: own, timeoutMs: 99 })).id);
    expect(fromJob).toMatchObject({ maxAttempts: 2, backoff: own, timeoutMs: 99 });

    await t.stores.queues.configure(q, { defaults: { maxAttempts: 4 } });
    expect(await t.store.getJob(q, (await enq(q)).id)).toMatchObject({ maxAttempts: 4, timeoutMs: 4321 });
  });

  it('a store with other process defaults uses them', async () => {
    const q = newQueue();
    const store = createRedisStores(t.redis, t.prefix, { maxAttempts: 7, timeoutMs: 5000, idempotencyTtlMs: 60_000 }, t.scripts).jobs;
    const [r] = await store.enqueue([norm(q)]);
    expect(await t.store.getJob(q, r.id)).toMatchObject({ maxAttempts: 7, timeoutMs: 5000 });
  });

  it('stores the named priorities as numbers', async () => {
    const q = newQueue();
    for (const [p, n] of [['high', 10], ['normal', 0], ['low', -10]] as const) {
      expect((await t.store.getJob(q, (await enq(q, { priority: p })).id))!.priority).toBe(n);
    }
  });
});

describe('enqueue: delays on the Redis clock', () => {
  it('delayMs makes a delayed job with runAt = createdAt + delayMs, scored by runAt in delayed', async () => {
    const q = newQueue();
    const r = await enq(q, { delayMs: 5000 });
    expect(r.status).toBe('delayed');
    const j = (await t.store.getJob(q, r.id))!;
    expect(j.status).toBe('delayed');
    expect(j.runAt - j.createdAt).toBe(5000);
    const k = t.keys(q);
    expect(await t.redis.zscore(k.delayed, r.id)).toBe(String(j.runAt));
    expect(await t.redis.zscore(k.waiting, r.id)).toBeNull();
    expect(efta(await events(q, r.id))).toEqual([['enqueued', '', 'delayed', 0]]);
    expect((await events(q, r.id))[0].ra).toBe(String(j.runAt));
  });

  it('delayMs 0 is an immediate job', async () => {
    const q = newQueue();
    const r = await enq(q, { delayMs: 0 });
    expect(r.status).toBe('waiting');
    const j = (await t.store.getJob(q, r.id))!;
    expect(j.runAt).toBe(j.createdAt);
  });

  it('runAt in the future is delayed until exactly runAt', async () => {
    const q = newQueue();
    const runAt = (await redisNow()) + 60_000;
    const r = await enq(q, { runAt });
    expect(r.status).toBe('delayed');
    expect((await t.store.getJob(q, r.id))!.runAt).toBe(runAt);
    expect(await t.redis.zscore(t.keys(q).delayed, r.id)).toBe(String(runAt));
  });

  it('runAt in the past (or 0) runs now: waiting, runAt = Redis now', async () => {
    const q = newQueue();
    for (const runAt of [(await redisNow()) - 3_600_000, 0]) {
      const before = await redisNow();
      const r = await enq(q, { runAt });
      expect(r.status).toBe('waiting');
      const j = (await t.store.getJob(q, r.id))!;
      expect(j.runAt).toBe(j.createdAt);
      expect(j.runAt).toBeGreaterThanOrEqual(before);
    }
    expect((await t.store.claim(q, 10, 1000, 'w')).jobs).toHaveLength(2);
  });

  it("times come from Redis, not from the host's clock", async () => {
    const q = newQueue();
    const realNow = Date.now();
    const spy = jest.spyOn(Date, 'now').mockReturnValue(realNow + 365 * 86_400_000);
    try {
      const before = await redisNow();
      const r = await enq(q, { delayMs: 1000 });
      const after = await redisNow();
      const j = (await t.store.getJob(q, r.id))!;
      expect(j.createdAt).toBeGreaterThanOrEqual(before);
      expect(j.createdAt).toBeLessThanOrEqual(after);
      expect(j.runAt).toBe(j.createdAt + 1000);
    } finally {
      spy.mockRestore();
    }
  });

  it('very long delays (30 days, 2^31 ms) stay delayed with runAt = now + delay (C10)', async () => {
    const q = newQueue();
    const ids: string[] = [];
    for (const delayMs of [2_592_000_000, 2_147_483_648, 31_536_000_000]) {
      const r = await enq(q, { delayMs });
      expect(r.status).toBe('delayed');
      const j = (await t.store.getJob(q, r.id))!;
      expect(j.runAt - j.createdAt).toBe(delayMs);
      ids.push(r.id);
    }
    expect((await t.store.promoteDelayed(q, 100)).promoted).toBe(0);
    const c = await t.store.claim(q, 10, 1000, 'w');
    expect(c.jobs).toHaveLength(0);
    expect(c.retryInMs).toBeGreaterThan(2_147_483_648 - 10_000);
    expect(c.retryInMs).toBeLessThanOrEqual(2_147_483_648);
    for (const id of ids) expect((await t.store.getJob(q, id))!.status).toBe('delayed');
  });
});

describe('enqueue: waiting-set scores', () => {
  it('scores (100 - priority)·2^44 + seq exactly, even for extreme priorities and huge sequences', async () => {
    const q = newQueue();
    const k = t.keys(q);
    await t.redis.hset(k.meta, 'seq', String(SEQ_SPAN - 10));
    const low = await enq(q, { priority: -100 }); // score 200·2^44 + 2^44 - 9: beyond 2^51, must not round
    const high = await enq(q, { priority: 100 });
    const low2 = await enq(q, { priority: -100 });
    expect(await t.redis.zscore(k.waiting, low.id)).toBe(String(200 * SEQ_SPAN + SEQ_SPAN - 9));
    expect(await t.redis.zscore(k.waiting, high.id)).toBe(String(SEQ_SPAN - 8));
    expect(await t.redis.zscore(k.waiting, low2.id)).toBe(String(200 * SEQ_SPAN + SEQ_SPAN - 7));
    const c = await t.store.claim(q, 10, 1000, 'w');
    expect(c.jobs.map((j) => j.id)).toEqual([high.id, low.id, low2.id]);
  });
});

describe('enqueue: idempotency keys', () => {
  it('same key and same body replays the first job: same id, replayed true, nothing written', async () => {
    const q = newQueue();
    const first = await enq(q, { payload: { a: 1 }, idempotencyKey: 'same' });
    const stateAfterFirst = await queueState(q);
    const again = await enq(q, { payload: { a: 1 }, idempotencyKey: 'same' });
    expect(again).toEqual({ id: first.id, status: 'waiting', replayed: true });
    expect(await queueState(q)).toEqual(stateAfterFirst);
    expect(efta(await events(q))).toEqual([['enqueued', '', 'waiting', 0]]);
  });

  it("a replay reports the job's current status", async () => {
    const q = newQueue();
    const first = await enq(q, { idempotencyKey: 'k' });
    await t.store.claim(q, 1, 10_000, 'w');
    expect(await enq(q, { idempotencyKey: 'k' })).toEqual({ id: first.id, status: 'active', replayed: true });
  });

  it('stores key → id|bodyHash with the idempotency TTL', async () => {
    const q = newQueue();
    const r = await enq(q, { idempotencyKey: 'ttl' });
    const key = `${t.keys(q).base}idem:ttl`;
    expect(await t.redis.get(key)).toMatch(new RegExp(`^${r.id}\\|.+`));
    const pttl = await t.redis.pttl(key);
    expect(pttl).toBeGreaterThan(86_400_000 - 60_000);
    expect(pttl).toBeLessThanOrEqual(86_400_000);
  });

  it.each([
    ['payload', { payload: { a: 2 } }],
    ['priority', { priority: 5 }],
    ['delay', { delayMs: 100 }],
    ['maxAttempts', { maxAttempts: 9 }],
    ['type', { type: 'other' }],
  ])('same key with a different %s → IdempotencyConflictError, nothing written', async (_what, diff) => {
    const q = newQueue();
    await enq(q, { payload: { a: 1 }, idempotencyKey: 'c' });
    const before = await queueState(q);
    const err = await t.store.enqueue([norm(q, { payload: { a: 1 }, idempotencyKey: 'c', ...diff })]).catch((e) => e);
    expect(err).toBeInstanceOf(IdempotencyConflictError);
    expect(err.idempotencyKey).toBe('c');
    expect(err.code).toBe('conflict');
    expect(await queueState(q)).toEqual(before);
  });

  it('a conflict anywhere in a batch writes nothing of the batch (conflict with an earlier call)', async () => {
    const q = newQueue();
    await enq(q, { payload: { a: 1 }, idempotencyKey: 'old' });
    const before = await queueState(q);
    const err = await t.store
      .enqueue([norm(q, { payload: { n: 1 } }), norm(q, { idempotencyKey: 'fresh' }), norm(q, { payload: { a: 2 }, idempotencyKey: 'old' })])
      .catch((e) => e);
    expect(err).toBeInstanceOf(IdempotencyConflictError);
    expect(err.idempotencyKey).toBe('old');
    expect(await queueState(q)).toEqual(before);
    expect(await t.redis.exists(`${t.keys(q).base}idem:fresh`)).toBe(0);
  });

  it('a conflict within one batch (same key, two bodies) writes nothing', async () => {
    const q = newQueue();
    const before = await queueState(q);
    const err = await t.store
      .enqueue([norm(q, { payload: { a: 1 }, idempotencyKey: 'dup' }), norm(q), norm(q, { payload: { a: 2 }, idempotencyKey: 'dup' })])
      .catch((e) => e);
    expect(err).toBeInstanceOf(IdempotencyConflictError);
    expect(err.idempotencyKey).toBe('dup');
    expect(await queueState(q)).toEqual(before);
  });

  it('the same key and body twice in one batch makes one job, the second replayed', async () => {
    const q = newQueue();
    const rs = await t.store.enqueue([norm(q, { payload: { a: 1 }, idempotencyKey: 'twice' }), norm(q, { payload: { a: 1 }, idempotencyKey: 'twice' })]);
    expect(rs[0]).toMatchObject({ id: expect.any(String), status: 'waiting', replayed: false });
    expect(rs[1]).toEqual({ id: rs[0].id, status: 'waiting', replayed: true });
    expect(await t.redis.zcard(t.keys(q).waiting)).toBe(1);
    expect(await events(q)).toHaveLength(1);
  });

  it('keys are per queue', async () => {
    const q1 = newQueue();
    const q2 = newQueue();
    const a = await enq(q1, { payload: { a: 1 }, idempotencyKey: 'shared' });
    const b = await enq(q2, { payload: { a: 2 }, idempotencyKey: 'shared' });
    expect(b.replayed).toBe(false);
    expect(b.id).not.toBe(a.id);
  });

  it('after the TTL the key is free again', async () => {
    const q = newQueue();
    const store = createRedisStores(t.redis, t.prefix, { maxAttempts: 3, timeoutMs: 600_000, idempotencyTtlMs: 200 }, t.scripts).jobs;
    const [a] = await store.enqueue([norm(q, { payload: { a: 1 }, idempotencyKey: 'short' })]);
    await sleep(300);
    const [b] = await store.enqueue([norm(q, { payload: { a: 2 }, idempotencyKey: 'short' })]);
    expect(b.replayed).toBe(false);
    expect(b.id).not.toBe(a.id);
  });

  it("a replay of a job Redis no longer holds reports status 'unknown'", async () => {
    const q = newQueue();
    const a = await enq(q, { idempotencyKey: 'gone' });
    await t.redis.del(`${t.keys(q).base}job:${a.id}`);
    expect(await enq(q, { idempotencyKey: 'gone' })).toEqual({ id: a.id, status: 'unknown', replayed: true });
  });
});

describe('enqueue: batches', () => {
  it('returns results in input order, mixing waiting and delayed jobs', async () => {
    const q = newQueue();
    const rs = await t.store.enqueue([norm(q, { payload: { i: 0 } }), norm(q, { payload: { i: 1 }, delayMs: 60_000 }), norm(q, { payload: { i: 2 } })]);
    expect(rs.map((r) => r.status)).toEqual(['waiting', 'delayed', 'waiting']);
    for (const [i, r] of rs.entries()) expect((await t.store.getJob(q, r.id))!.payload).toEqual({ i });
  });

  it('spreads a multi-queue batch over its queues, results still in input order', async () => {
    const q1 = newQueue();
    const q2 = newQueue();
    const rs = await t.store.enqueue([norm(q1, { payload: { i: 0 } }), norm(q2, { payload: { i: 1 } }), norm(q1, { payload: { i: 2 } })]);
    expect((await t.store.getJob(q1, rs[0].id))!.payload).toEqual({ i: 0 });
    expect((await t.store.getJob(q2, rs[1].id))!.payload).toEqual({ i: 1 });
    expect((await t.store.getJob(q1, rs[2].id))!.payload).toEqual({ i: 2 });
    expect(await t.redis.zcard(t.keys(q1).waiting)).toBe(2);
    expect(await t.redis.zcard(t.keys(q2).waiting)).toBe(1);
  });

  it('a concurrent observer sees all of a batch or none of it', async () => {
    const q = newQueue();
    const k = t.keys(q);
    const observer = createRedis({ redisUrl: REDIS_URL, redisClusterNodes: null });
    const seen = new Set<string>();
    let stop = false;
    const watch = (async () => {
      while (!stop) {
        const [[, w], [, ev], [, keys]] = (await observer.multi().zcard(k.waiting).xlen(k.events).eval(`return #redis.call('KEYS', ARGV[1])`, 0, `${k.base}job:*`).exec()) as [unknown, number][];
        seen.add(`${w}/${ev}/${keys}`);
      }
    })();
    await sleep(20);
    const rs = await t.store.enqueue(Array.from({ length: 500 }, (_, i) => norm(q, { payload: { i, pad: 'x'.repeat(100) } })));
    await sleep(20);
    stop = true;
    await watch;
    observer.disconnect();
    expect(rs).toHaveLength(500);
    expect([...seen].sort()).toEqual(['0/0/0', '500/500/500']);
  });
});

describe('enqueue: requests coalesced in one event-loop turn stay independent', () => {
  it('concurrent requests all succeed with distinct ids, in FIFO order of submission', async () => {
    const q = newQueue();
    const rs = await Promise.all(Array.from({ length: 10 }, (_, i) => t.store.enqueue([norm(q, { payload: { i } }), norm(q, { payload: { i, second: true } })])));
    const all = rs.flat();
    expect(new Set(all.map((r) => r.id)).size).toBe(20);
    const got = await t.store.claim(q, 20, 1000, 'w');
    expect(got.jobs.map((j) => j.id)).toEqual(all.map((r) => r.id));
  });

  it('a conflict fails only its own request; the others of the same turn are written', async () => {
    const q = newQueue();
    await enq(q, { payload: { v: 1 }, idempotencyKey: 'k' });
    const [a, b, c] = await Promise.allSettled([
      t.store.enqueue([norm(q, { payload: { n: 'a' } })]),
      t.store.enqueue([norm(q, { payload: { n: 'b' } }), norm(q, { payload: { v: 2 }, idempotencyKey: 'k' })]),
      t.store.enqueue([norm(q, { payload: { n: 'c' } })]),
    ]);
    expect(a.status).toBe('fulfilled');
    expect(b.status).toBe('rejected');
    expect((b as PromiseRejectedResult).reason).toBeInstanceOf(IdempotencyConflictError);
    expect(c.status).toBe('fulfilled');
    const payloads = (await t.store.claim(q, 10, 1000, 'w')).jobs.map((j) => j.payload);
    expect(payloads).toEqual([{ v: 1 }, { n: 'a' }, { n: 'c' }]);
  });

  it('two requests of one turn with the same key: same body replays, another body conflicts', async () => {
    const q = newQueue();
    const [r1, r2] = await Promise.all([
      t.store.enqueue([norm(q, { payload: { v: 1 }, idempotencyKey: 'same' })]),
      t.store.enqueue([norm(q, { payload: { v: 1 }, idempotencyKey: 'same' })]),
    ]);
    expect(r1[0].replayed).toBe(false);
    expect(r2[0]).toEqual({ id: r1[0].id, status: 'waiting', replayed: true });

    const [s1, s2] = await Promise.allSettled([
      t.store.enqueue([norm(q, { payload: { v: 1 }, idempotencyKey: 'other' })]),
      t.store.enqueue([norm(q, { payload: { v: 2 }, idempotencyKey: 'other' })]),
    ]);
    expect(s1.status).toBe('fulfilled');
    expect((s2 as PromiseRejectedResult).reason).toBeInstanceOf(IdempotencyConflictError);
    expect(await t.redis.zcard(t.keys(q).waiting)).toBe(2);
  });

  it('many requests of one turn leave in several calls as they gather (pipelined), FIFO across the calls', async () => {
    const q = newQueue();
    await enq(q); // registers the queue, so every request below is submitted in the same turn
    const calls: number[] = [];
    const run = t.scripts.run.bind(t.scripts);
    const spy = jest.spyOn(t.scripts, 'run').mockImplementation((name, keys, args) => {
      if (name === 'enqueueJobs') calls.push(Number(args[5])); // groups in the call
      return run(name, keys, args);
    });
    try {
      await enq(q, { payload: { v: 1 }, idempotencyKey: 'k' });
      calls.length = 0;
      // 110 single requests, then one of 30 jobs (never split), then a conflicting one and a last one.
      const singles = Array.from({ length: 110 }, (_, i) => t.store.enqueue([norm(q, { payload: { i } })]));
      // Four calls have left already, each written at once rather than held for the tick's auto-pipeline.
      expect(calls).toHaveLength(4);
      expect((t.redis as unknown as { autoPipelineQueueSize: number }).autoPipelineQueueSize).toBe(0);
      const batch = t.store.enqueue(Array.from({ length: 30 }, (_, i) => norm(q, { payload: { b: i } })));
      const bad = t.store.enqueue([norm(q, { payload: { n: 'x' } }), norm(q, { payload: { v: 2 }, idempotencyKey: 'k' })]);
      const last = t.store.enqueue([norm(q, { payload: { n: 'last' } })]);
      const [s, b, x, l] = await Promise.allSettled([Promise.all(singles), batch, bad, last]);
      expect((x as PromiseRejectedResult).reason).toBeInstanceOf(IdempotencyConflictError);
      // A call leaves each time 25 jobs have gathered: 4 × 25 singles, then the last 10 singles
      // with the batch of 30 (never split), then the last two requests at the end of the turn.
      expect(calls).toEqual([25, 25, 25, 25, 11, 2]);
      type Ok = PromiseFulfilledResult<{ id: string }[]>;
      const ids = [...(s as PromiseFulfilledResult<{ id: string }[][]>).value.flat(), ...(b as Ok).value, ...(l as Ok).value].map((r) => r.id);
      expect(ids).toHaveLength(141);
      const got = await t.store.claim(q, 200, 1000, 'w');
      // FIFO: the two jobs enqueued first, then every request in submission order.
      expect(got.jobs.map((j) => j.id)).toEqual([expect.any(String), expect.any(String), ...ids]);
    } finally {
      spy.mockRestore();
    }
  });

  it('a call resent after its first run (reply lost on a reconnect) replays every job and writes nothing', async () => {
    const q = newQueue();
    await enq(q);
    let sent: { keys: string[]; args: (string | number)[] } | undefined;
    const run = t.scripts.run.bind(t.scripts);
    const spy = jest.spyOn(t.scripts, 'run').mockImplementation((name, keys, args) => {
      if (name === 'enqueueJobs') sent = { keys, args };
      return run(name, keys, args);
    });
    let first: { id: string }[][];
    try {
      first = await Promise.all([
        t.store.enqueue([norm(q, { payload: { a: 1 } }), norm(q, { payload: { a: 2 }, delayMs: 60_000 })]),
        t.store.enqueue([norm(q, { payload: { b: 1 }, idempotencyKey: 'r1' })]),
        t.store.enqueue([norm(q, { payload: { c: 1 } }), norm(q, { payload: { c: 2 } })]),
      ]);
    } finally {
      spy.mockRestore();
    }
    const before = await queueState(q);
    const hashes = await Promise.all(first.flat().map((r) => t.redis.hgetall(`${t.keys(q).base}job:${r.id}`)));
    // The same call again, byte for byte, as ioredis resends an unanswered command.
    const again = await t.scripts.run<(string | number)[][]>('enqueueJobs', sent!.keys, sent!.args);
    expect(again.map((g) => g[0])).toEqual([1, 1, 1]);
    const replayed = again.flatMap((g) => Array.from({ length: (g.length - 1) / 6 }, (_, i) => [g[1 + i * 6], g[3 + i * 6]]));
    expect(replayed).toEqual(first.flat().map((r) => [r.id, 1]));
    expect(await queueState(q)).toEqual({ ...before, meta: { ...before.meta, seq: expect.any(String) } });
    expect(await Promise.all(first.flat().map((r) => t.redis.hgetall(`${t.keys(q).base}job:${r.id}`)))).toEqual(hashes);
  });

  it('a resent call whose first and last jobs already finished and left Redis leaves its live middle job alone', async () => {
    const q = newQueue();
    await enq(q);
    await t.store.claim(q, 10, 30_000, 'w0'); // out of the way
    let sent: { keys: string[]; args: (string | number)[] } | undefined;
    const run = t.scripts.run.bind(t.scripts);
    const spy = jest.spyOn(t.scripts, 'run').mockImplementation((name, keys, args) => {
      if (name === 'enqueueJobs') sent = { keys, args };
      return run(name, keys, args);
    });
    let ids: string[];
    try {
      ids = (await t.store.enqueue([norm(q, { payload: { a: 1 }, priority: 10 }), norm(q, { payload: { b: 1 } }), norm(q, { payload: { c: 1 }, priority: 10 })])).map((r) => r.id);
    } finally {
      spy.mockRestore();
    }
    const [a, b, c] = ids;
    const k = t.keys(q);
    const first = await t.store.claim(q, 2, 30_000, 'w1'); // a and c (higher priority)
    expect(first.jobs.map((j) => j.id).sort()).toEqual([a, c].sort());
    await t.store.complete(q, 'w1', first.jobs.map((j) => ({ id: j.id, lockToken: j.lockToken, result: null })));
    // What the mirror writer does once they are mirrored (KEEP_COMPLETED_* unset).
    expect(await t.scripts.run('forgetJobs', [k.done, k.meta], [k.base, -1, -1, a, c])).toBe(2);
    const running = await t.store.claim(q, 1, 30_000, 'w2');
    expect(running.jobs.map((j) => j.id)).toEqual([b]);
    const before = await t.redis.hgetall(`${k.base}job:${b}`);
    // ioredis resends the unanswered call after a reconnect, byte for byte.
    await t.scripts.run('enqueueJobs', sent!.keys, sent!.args);
    expect(await t.redis.hgetall(`${k.base}job:${b}`)).toEqual(before);
    expect(await t.redis.zscore(k.waiting, b)).toBeNull();
    expect(await t.store.complete(q, 'w2', [{ id: b, lockToken: running.jobs[0].lockToken, result: null }])).toEqual(['completed']);
  });

  it('large requests: one of 1500 jobs, and two of 600 in one turn', async () => {
    const q = newQueue();
    const big = await t.store.enqueue(Array.from({ length: 1500 }, (_, i) => norm(q, { payload: { i } })));
    expect(big).toHaveLength(1500);
    const [x, y] = await Promise.all([0, 1].map((g) => t.store.enqueue(Array.from({ length: 600 }, (_, i) => norm(q, { payload: { g, i } })))));
    expect(x).toHaveLength(600);
    expect(y).toHaveLength(600);
    expect(new Set([...big, ...x, ...y].map((r) => r.id)).size).toBe(2700);
    expect(await t.redis.zcard(t.keys(q).waiting)).toBe(2700);
    expect(await t.redis.xlen(t.keys(q).events)).toBe(2700);
  });
});

describe('enqueue: wake list', () => {
  it('a waiting job pushes one wake token, capped at 16', async () => {
    const q = newQueue();
    const k = t.keys(q);
    await enq(q);
    expect(await t.redis.llen(k.wake)).toBe(1);
    for (let i = 0; i < 30; i++) await enq(q);
    expect(await t.redis.llen(k.wake)).toBe(16);
  });

  it('a delayed job wakes only when it becomes the earliest delayed job', async () => {
    const q = newQueue();
    const k = t.keys(q);
    await enq(q, { delayMs: 10_000 });
    expect(await t.redis.llen(k.wake)).toBe(1);
    await t.redis.del(k.wake);
    await enq(q, { delayMs: 20_000 });
    expect(await t.redis.llen(k.wake)).toBe(0);
    await enq(q, { delayMs: 5_000 });
    expect(await t.redis.llen(k.wake)).toBe(1);
  });

  it('a paused queue wakes nobody (its claims would answer paused); resuming wakes', async () => {
    const q = newQueue();
    const k = t.keys(q);
    await t.stores.queues.configure(q, { paused: true });
    await t.redis.del(k.wake);
    for (let i = 0; i < 5; i++) await enq(q);
    await enq(q, { delayMs: 5_000 });
    expect(await t.redis.llen(k.wake)).toBe(0);
    expect(await t.redis.zcard(k.waiting)).toBe(5);
    await t.stores.queues.configure(q, { paused: false });
    expect(await t.redis.llen(k.wake)).toBe(1);
    await enq(q);
    expect(await t.redis.llen(k.wake)).toBe(2);
  });
});

describe('enqueue: payloads round-trip exactly (enqueue → claim → getJob)', () => {
  async function roundTrip(payload: Record<string, unknown>) {
    const q = newQueue();
    const n = norm(q, { payload: payload as never });
    const [r] = await t.store.enqueue([n]);
    const c = await t.store.claim(q, 1, 30_000, 'w');
    expect(c.jobs).toHaveLength(1);
    expect(c.jobs[0].id).toBe(r.id);
    expect(c.jobs[0].payload).toEqual(payload);
    expect(JSON.stringify(c.jobs[0].payload)).toBe(n.payloadJson);
    const j = (await t.store.getJob(q, r.id))!;
    expect(j.payload).toEqual(payload);
    expect(JSON.stringify(j.payload)).toBe(n.payloadJson);
    const [ev] = await events(q, r.id);
    expect(ev.p).toBe(n.payloadJson);
    // The lean worker claim reads the payload its own way: same bytes.
    const [r2] = await t.store.enqueue([n]);
    const lean = await t.store.claimForWorker(q, 1, 30_000, 'w');
    expect(lean.jobs.map((x) => x.id)).toEqual([r2.id]);
    expect(lean.jobs[0].payload).toEqual(payload);
    expect(JSON.stringify(lean.jobs[0].payload)).toBe(n.payloadJson);
    return { q, id: r.id, bytes: Buffer.byteLength(n.payloadJson) };
  }
  /** Number of payload chunk fields (p0, p1, ...) in the job hash. */
  const pn = async (q: string, id: string) =>
    Object.keys(await t.redis.hgetall(`${t.keys(q).base}job:${id}`)).filter((f) => /^p\d+$/.test(f)).length;

  it('emoji split across 64-byte chunk boundaries', async () => {
    // {"a":" is 6 bytes; 4-byte emoji from byte 6 put a chunk boundary (64) inside an emoji.
    const { q, id, bytes } = await roundTrip({ a: '😀'.repeat(100) });
    expect(bytes).toBeLessThanOrEqual(1024);
    expect(await pn(q, id)).toBe(Math.ceil(bytes / 64));
  });

  it('a lone surrogate, NUL, separators, CJK, combining marks and RTL text', async () => {
    await roundTrip({ lone: '\ud800', lowLone: 'x\udc00y', nul: 'a\u0000b', pipe: 'a|b|c', nl: 'l1\nl2\r\n', cjk: '漢字かな', comb: 'e\u0301', rtl: 'שלום', esc: '"\\/' });
  });

  it('unicode payloads on both sides of the 1 KiB chunking threshold', async () => {
    for (const len of [1000, 1010, 1100]) {
      // é is 2 bytes: exact byte lengths around 1024
      const payload = { s: 'é'.repeat((len - 8) / 2) };
      const { q, id, bytes } = await roundTrip(payload);
      expect(bytes).toBe(len);
      expect(await pn(q, id)).toBe(bytes <= 1024 ? Math.ceil(bytes / 64) : 1);
    }
  });

  it('exactly 1024 and 1025 bytes', async () => {
    const p1024 = { s: 'x'.repeat(1024 - 8) };
    const r1 = await roundTrip(p1024);
    expect(r1.bytes).toBe(1024);
    expect(await pn(r1.q, r1.id)).toBe(16);
    const p1025 = { s: 'x'.repeat(1025 - 8) };
    const r2 = await roundTrip(p1025);
    expect(r2.bytes).toBe(1025);
    expect(await pn(r2.q, r2.id)).toBe(1);
  });

  it('the empty object', async () => {
    const { q, id } = await roundTrip({});
    expect(await pn(q, id)).toBe(1);
  });

  it('a 10 MB payload with multi-byte characters', async () => {
    const payload = { big: 'ab😀é漢'.repeat(Math.ceil((10 * 1024 * 1024) / 11)), lone: '\ud800' }; // 11 bytes per repeat
    const { bytes } = await roundTrip(payload);
    expect(bytes).toBeGreaterThan(10 * 1024 * 1024);
  });
});
