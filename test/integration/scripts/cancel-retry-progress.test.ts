/**
 * cancelJob-4.lua, retryJob-5.lua and updateProgress-1.lua through
 * RedisJobStore.cancel / retryFromDlq / progress, on real Redis.
 */
import Redis from 'ioredis';
import { JobNotFoundError, LeaseLostError, WrongStateError } from '../../../src/core/errors';
import type { EnqueueInput } from '../../../src/core/job-options';
import { createRedis } from '../../../src/redis/connection';
import { cancelChannel } from '../../../src/redis/keys';
import { createRedisStores } from '../../../src/redis/stores';
import { openStore, REDIS_URL, sleep, TestStore } from '../../support/redis';
import { efta, expectLegal, ids, scriptHelpers } from '../../support/scripts';

let t: TestStore;
beforeAll(async () => {
  t = await openStore('cancel-retry-progress');
});
afterAll(async () => t.close());

// ---- helpers (each test uses its own queue, so sets and events are its own) ----
const { queues, newQueue, enq, claimOne, staleToken, events, jk, snapshot } = scriptHelpers(() => t, 'crp');
/** A job in the dead-letter queue (failed, unrecoverable, after one attempt). */
async function deadLettered(q: string, input: Partial<EnqueueInput> = {}) {
  const { id, token } = await claimOne(q, { maxAttempts: 3, ...input });
  expect(await t.store.fail(q, id, token, { error: 'it broke', retryable: false, delayMs: 0, reason: 'error', workerId: 'w1' })).toBe('failed');
  return id;
}

describe('cancel', () => {
  it('a handler that finishes after a cancel request does not win: the job ends cancelled', async () => {
    const q = newQueue();
    const { id, token } = await claimOne(q);
    expect(await t.store.cancel(q, id)).toBe('active');
    expect(await t.store.complete(q, 'w1', [{ id, lockToken: token, result: { done: true } }])).toEqual(['cancelled']);
    const j = (await t.store.getJob(q, id))!;
    expect(j.status).toBe('cancelled');
    expect(j.result).toBeNull();
    expect(await t.redis.zscore(t.keys(q).active, id)).toBeNull();
    expect(efta(await events(q, id)).map((e) => e[0])).toEqual(['enqueued', 'claimed', 'cancel_requested', 'cancelled']);
  });

  it.each(['waiting', 'delayed'] as const)('a %s job is cancelled at once, out of its set, one cancelled event', async (state) => {
    const q = newQueue();
    const k = t.keys(q);
    const id = await enq(q, state === 'delayed' ? { delayMs: 60_000 } : {});
    const other = await enq(q);
    expect(await t.store.cancel(q, id)).toBe('cancelled');
    const j = (await t.store.getJob(q, id))!;
    expect(j.status).toBe('cancelled');
    expect(j.finishedAt).toEqual(expect.any(Number));
    for (const set of [k.waiting, k.delayed, k.active, k.failed]) expect(await t.redis.zscore(set, id)).toBeNull();
    const ev = await events(q, id);
    expect(efta(ev)).toEqual([
      ['enqueued', '', state, 0],
      ['cancelled', state, 'cancelled', 0],
    ]);
    expect(ev[1].r).toBe('client');
    expect(ids(await t.store.claim(q, 10, 1000, 'w'))).toEqual([other]);
  });

  it('an active job gets a cancel request: one cancel_requested event, a pub/sub message, heartbeat says cancel_requested', async () => {
    const q = newQueue();
    const { id, token } = await claimOne(q);
    const sub = new Redis(REDIS_URL);
    const messages: string[] = [];
    try {
      await sub.subscribe(cancelChannel(t.prefix));
      sub.on('message', (_ch, msg) => messages.push(msg));
      expect(await t.store.cancel(q, id)).toBe('active');
      const j = (await t.store.getJob(q, id))!;
      expect(j).toMatchObject({ status: 'active', cancelRequested: true });
      expect((await t.store.extendLeases(q, [{ id, lockToken: token }], 30_000)).statuses).toEqual(['cancel_requested']);
      // Asking again changes nothing and announces nothing.
      const before = await snapshot(q, id);
      expect(await t.store.cancel(q, id)).toBe('active');
      expect(await snapshot(q, id)).toEqual(before);
      await sleep(50);
      expect(messages).toEqual([id]);
    } finally {
      sub.disconnect();
    }
    const ev = await events(q, id);
    expect(efta(ev.slice(2))).toEqual([['cancel_requested', 'active', 'active', 1]]);
    expect(ev[2].r).toBe('client');

    // The holder stops: fail with reason 'cancelled' ends it cancelled.
    expect(await t.store.fail(q, id, token, { error: 'aborted', retryable: true, delayMs: 0, reason: 'cancelled', workerId: 'w1' })).toBe('cancelled');
    expect((await t.store.getJob(q, id))!.status).toBe('cancelled');
    expect(efta((await events(q, id)).slice(3))).toEqual([['cancelled', 'active', 'cancelled', 1]]);
  });

  it('cancelAndGet answers with the job as the cancel left it, even when the holder ends it the moment the request is published', async () => {
    // The race CI hit once in the e2e suite: the worker's abort (pub/sub)
    // ended the job before a separate read ran, so DELETE answered 202 with
    // status 'cancelled'. In-process here a read after the script rarely loses
    // that race, so this checks the contract; the MULTI is what guarantees it.
    const q = newQueue();
    // The holder (a worker) has its own connection, as it would in production.
    const holderRedis = createRedis({ redisUrl: REDIS_URL, redisClusterNodes: null });
    const holder = createRedisStores(holderRedis, t.prefix).jobs;
    const sub = new Redis(REDIS_URL);
    const tokens = new Map<string, string>();
    const ended: Promise<unknown>[] = [];
    try {
      await sub.subscribe(cancelChannel(t.prefix));
      sub.on('message', (_ch, id: string) => {
        const token = tokens.get(id);
        if (token) ended.push(holder.fail(q, id, token, { error: 'aborted', retryable: true, delayMs: 0, reason: 'cancelled', workerId: 'w1' }));
      });
      for (let i = 0; i < 40; i++) {
        const { id, token } = await claimOne(q);
        tokens.set(id, token);
        const r = await t.store.cancelAndGet(q, id);
        expect(r.status).toBe('active');
        expect(r.job).toMatchObject({ id, status: 'active', cancelRequested: true });
      }
      await sleep(100);
      expect(await Promise.all(ended)).toEqual(Array(40).fill('cancelled'));
    } finally {
      sub.disconnect();
      holderRedis.disconnect();
    }
  });

  it.each(['completed', 'failed', 'cancelled'] as const)('a %s job: WrongStateError naming the status, nothing changed', async (state) => {
    const q = newQueue();
    let id: string;
    if (state === 'completed') {
      const c = await claimOne(q);
      await t.store.complete(q, 'w1', [{ id: c.id, lockToken: c.token, result: 1 }]);
      id = c.id;
    } else if (state === 'failed') {
      id = await deadLettered(q);
    } else {
      id = await enq(q);
      await t.store.cancel(q, id);
    }
    const before = await snapshot(q, id);
    const err = await t.store.cancel(q, id).catch((e) => e);
    expect(err).toBeInstanceOf(WrongStateError);
    expect(err.status).toBe(state);
    expect(err.code).toBe('conflict');
    expect(await snapshot(q, id)).toEqual(before);
  });

  it('an unknown job: JobNotFoundError', async () => {
    const q = newQueue();
    const err = await t.store.cancel(q, 'nope').catch((e) => e);
    expect(err).toBeInstanceOf(JobNotFoundError);
    expect(await t.redis.xlen(t.keys(q).events)).toBe(0);
  });
});

describe('retryFromDlq', () => {
  it('puts a failed job back in waiting with fresh counters, at the back of its priority (C8)', async () => {
    const q = newQueue();
    const k = t.keys(q);
    const { id, token } = await claimOne(q, { priority: 3, maxAttempts: 1 });
    await t.store.progress(q, id, token, 'w1', 50, []);
    await t.store.fail(q, id, token, { error: 'it broke', retryable: true, delayMs: 0, reason: 'error', workerId: 'w1' });
    expect((await t.store.getJob(q, id))!).toMatchObject({ status: 'failed', attempts: 1, progress: 50 });
    const laterSame = await enq(q, { priority: 3 });
    const lower = await enq(q, { priority: 2 });
    await t.redis.del(k.wake);

    expect(await t.stores.deadLetters.retry(q, id)).toBe('waiting');
    const j = (await t.store.getJob(q, id))!;
    expect(j).toMatchObject({ status: 'waiting', attempts: 0, priority: 3, finishedAt: null, result: null, workerId: null, progress: null, cancelRequested: false });
    expect(await t.redis.zscore(k.failed, id)).toBeNull();
    expect(await t.redis.zscore(k.waiting, id)).not.toBeNull();
    expect(await t.redis.llen(k.wake)).toBe(1);
    const ev = await events(q, id);
    expect(efta(ev.slice(-1))).toEqual([['retried_from_dlq', 'failed', 'waiting', 0]]);
    expect(ev[ev.length - 1].r).toBe('manual');
    expect(ev[ev.length - 1].p).toBeUndefined();

    // Back of its priority: behind the equal-priority job already waiting, ahead of lower priorities.
    expect(ids(await t.store.claim(q, 10, 30_000, 'w2'))).toEqual([laterSame, id, lower]);
    const again = (await t.store.getJob(q, id))!;
    expect(again).toMatchObject({ status: 'active', attempts: 1, executionSeq: 2 });
  });

  it('with a new payload, which replaces the old one whatever the sizes', async () => {
    const q = newQueue();
    const small = { a: 1 };
    const chunked = { s: 'é😀'.repeat(60) }; // several 64-byte chunks
    const big = { s: 'x'.repeat(5000), u: '\ud800😀' }; // one field
    const tiny = {};
    for (const [from, to] of [[small, chunked], [chunked, small], [chunked, big], [big, chunked], [big, tiny], [chunked, { s: 'é'.repeat(20) }]]) {
      const id = await deadLettered(q, { payload: from });
      expect(await t.stores.deadLetters.retry(q, id, to)).toBe('waiting');
      expect((await t.store.getJob(q, id))!.payload).toEqual(to);
      expect((await events(q, id)).pop()!.p).toBe(JSON.stringify(to));
      const c = await t.store.claim(q, 1, 30_000, 'w');
      expect(c.jobs[0]).toMatchObject({ id, payload: to });
      await t.store.release(q, 'w', [{ id, lockToken: c.jobs[0].lockToken }]);
      const lean = await t.store.claimForWorker(q, 1, 30_000, 'w');
      expect(lean.jobs[0]).toMatchObject({ id, payload: to });
      await t.store.complete(q, 'w', [{ id, lockToken: lean.jobs[0].lockToken, result: null }]);
      expect((await t.store.getJob(q, id))!.payload).toEqual(to);
    }
  });

  it('a retried job can succeed (C8)', async () => {
    const q = newQueue();
    const id = await deadLettered(q, { payload: { fail: true } });
    await t.stores.deadLetters.retry(q, id, { fail: false });
    const c = await t.store.claim(q, 1, 30_000, 'w');
    expect(await t.store.complete(q, 'w', [{ id, lockToken: c.jobs[0].lockToken, result: 'ok' }])).toEqual(['completed']);
    expect(efta(await events(q, id)).map((e) => e[0])).toEqual(['enqueued', 'claimed', 'failed', 'retried_from_dlq', 'claimed', 'completed']);
  });

  it('a job dead-lettered by the reaper is retried with attempts reset', async () => {
    const q = newQueue();
    const { id } = await claimOne(q, { maxAttempts: 1 }, 100);
    await sleep(150);
    await t.store.reapExpired(q, 10);
    expect((await t.store.getJob(q, id))!.status).toBe('failed');
    expect(await t.stores.deadLetters.retry(q, id)).toBe('waiting');
    expect((await t.store.claim(q, 1, 30_000, 'w')).jobs[0]).toMatchObject({ id, attempts: 1, maxAttempts: 1 });
  });

  it('a cancelled job can be retried', async () => {
    const q = newQueue();
    const id = await enq(q);
    await t.store.cancel(q, id);
    expect(await t.stores.deadLetters.retry(q, id)).toBe('waiting');
    expect(efta((await events(q, id)).slice(-1))).toEqual([['retried_from_dlq', 'cancelled', 'waiting', 0]]);
    expect(ids(await t.store.claim(q, 1, 30_000, 'w'))).toEqual([id]);
  });

  it('a corrupted job retried from the DLQ is dead-lettered again on claim, without harm', async () => {
    const q = newQueue();
    const id = await enq(q);
    const good = await enq(q);
    await t.redis.multi().del(jk(q, id)).set(jk(q, id), 'garbage').exec();
    expect(ids(await t.store.claim(q, 1, 30_000, 'w'))).toEqual([]);
    expect(await t.stores.deadLetters.retry(q, id)).toBe('waiting');
    expect(ids(await t.store.claim(q, 10, 30_000, 'w'))).toEqual([good]);
    expect(await t.redis.zscore(t.keys(q).failed, id)).not.toBeNull();
  });

  it.each(['waiting', 'delayed', 'active', 'completed'] as const)('a %s job: WrongStateError, nothing changed', async (state) => {
    const q = newQueue();
    let id: string;
    if (state === 'waiting') id = await enq(q);
    else if (state === 'delayed') id = await enq(q, { delayMs: 60_000 });
    else {
      const c = await claimOne(q);
      id = c.id;
      if (state === 'completed') await t.store.complete(q, 'w1', [{ id, lockToken: c.token, result: 1 }]);
    }
    const before = await snapshot(q, id);
    const err = await t.stores.deadLetters.retry(q, id, { replaced: true }).catch((e) => e);
    expect(err).toBeInstanceOf(WrongStateError);
    expect(err.status).toBe(state);
    expect(await snapshot(q, id)).toEqual(before);
  });

  it('an unknown job: JobNotFoundError', async () => {
    const q = newQueue();
    await expect(t.stores.deadLetters.retry(q, 'nope')).rejects.toThrow(JobNotFoundError);
    expect(await t.redis.xlen(t.keys(q).events)).toBe(0);
    expect(await t.redis.hget(t.keys(q).meta, 'seq')).toBeNull();
  });
});

describe('progress', () => {
  it('records progress (number, then object) with one progress event each', async () => {
    const q = newQueue();
    const { id, token } = await claimOne(q);
    await t.store.progress(q, id, token, 'w1', 42, []);
    expect((await t.store.getJob(q, id))!.progress).toBe(42);
    const obj = { step: 'upload', done: 3, of: 7, note: 'héllo 😀' };
    await t.store.progress(q, id, token, 'w1', obj, []);
    expect((await t.store.getJob(q, id))!.progress).toEqual(obj);
    const ev = await events(q, id);
    expect(efta(ev.slice(2))).toEqual([
      ['progress', 'active', 'active', 1],
      ['progress', 'active', 'active', 1],
    ]);
    expect(ev[2]).toMatchObject({ d: '42', w: 'w1', x: '1' });
    expect(JSON.parse(ev[3].d)).toEqual(obj);
  });

  it('log lines become log entries (not transitions); no progress event without progress', async () => {
    const q = newQueue();
    const { id, token } = await claimOne(q);
    await t.store.progress(q, id, token, 'w1', undefined, [
      { level: 'info', message: 'starting' },
      { level: 'warn', message: 'a|b|c with pipes' },
      { level: 'error', message: '' },
      { level: 'info', message: 'ünïcödé 😀' },
    ]);
    expect((await t.store.getJob(q, id))!.progress).toBeNull();
    const logs = (await events(q, id)).slice(2);
    expect(logs.map((e) => [e.e, e.lvl, e.m, e.a])).toEqual([
      ['log', 'info', 'starting', '1'],
      ['log', 'warn', 'a|b|c with pipes', '1'],
      ['log', 'error', '', '1'],
      ['log', 'info', 'ünïcödé 😀', '1'],
    ]);
  });

  it('progress and logs together: one progress event, then the log entries', async () => {
    const q = newQueue();
    const { id, token } = await claimOne(q);
    await t.store.progress(q, id, token, 'w1', 50, [{ level: 'info', message: 'half way' }]);
    expect((await events(q, id)).slice(2).map((e) => e.e)).toEqual(['progress', 'log']);
  });

  describe('refusals change nothing (LeaseLostError)', () => {
    it('wrong lock token', async () => {
      const q = newQueue();
      const { id, token } = await claimOne(q);
      const before = await snapshot(q, id);
      await expect(t.store.progress(q, id, token + '!', 'w1', 10, [{ level: 'info', message: 'x' }])).rejects.toThrow(LeaseLostError);
      expect(await snapshot(q, id)).toEqual(before);
    });

    it('stale token after the lease was reaped and the job re-claimed', async () => {
      const q = newQueue();
      const { id, stale, current } = await staleToken(q);
      const before = await snapshot(q, id);
      await expect(t.store.progress(q, id, stale, 'w-old', 99, [{ level: 'info', message: 'late' }])).rejects.toThrow(LeaseLostError);
      expect(await snapshot(q, id)).toEqual(before);
      await t.store.progress(q, id, current, 'w-new', 1, []);
      expect((await t.store.getJob(q, id))!.progress).toBe(1);
    });

    it('wrong state: waiting and completed jobs', async () => {
      const q = newQueue();
      const waiting = await enq(q, { priority: -1 });
      const done = await claimOne(q);
      await t.store.complete(q, 'w1', [{ id: done.id, lockToken: done.token, result: 1 }]);
      for (const [id, token] of [[waiting, 'x'], [done.id, done.token]]) {
        const before = await snapshot(q, id);
        await expect(t.store.progress(q, id, token, 'w1', 5, [{ level: 'info', message: 'x' }])).rejects.toThrow(LeaseLostError);
        expect(await snapshot(q, id)).toEqual(before);
      }
    });

    it('unknown job', async () => {
      const q = newQueue();
      await expect(t.store.progress(q, 'nope', 'x', 'w1', 5, [])).rejects.toThrow(LeaseLostError);
      expect(await t.redis.exists(jk(q, 'nope'))).toBe(0);
      expect(await t.redis.xlen(t.keys(q).events)).toBe(0);
    });
  });
});

describe('cancel/retry/progress: audit trail', () => {
  it('every event written in this file is an allowed transition', async () => {
    for (const q of queues) expectLegal(await events(q));
  });
});
