/**
 * completeJobs-5.lua and failJob-7.lua through RedisJobStore.complete / fail,
 * on real Redis: outcomes, events, and fencing by the lock token.
 */
import { computeBackoffDelay } from '../../../src/core/backoff';
import { JobNotFoundError, LeaseLostError } from '../../../src/core/errors';
import type { FailInput } from '../../../src/core/ports';
import { openStore, sleep, TestStore } from '../../support/redis';
import { efta, expectLegal, scriptHelpers } from '../../support/scripts';

let t: TestStore;
beforeAll(async () => {
  t = await openStore('complete-fail');
});
afterAll(async () => t.close());

// ---- helpers (each test uses its own queue, so sets and events are its own) ----
const h = scriptHelpers(() => t, 'cf');
const { queues, newQueue, enq, claimOne, events, jk, snapshot, redisNow } = h;
/** The shared staleToken, and the second claim's token differs from the first. */
async function staleToken(q: string) {
  const s = await h.staleToken(q);
  expect(s.current).not.toBe(s.stale);
  return s;
}
const failInput = (over: Partial<FailInput> = {}): FailInput => ({ error: 'boom', retryable: true, delayMs: 0, reason: 'error', workerId: 'w1', ...over });

describe('complete', () => {
  it('marks the job completed with its result and one completed event', async () => {
    const q = newQueue();
    const { id, token, job } = await claimOne(q);
    const result = { ok: true, list: [1, 'two', null], text: 'héllo 😀 \ud800' };
    expect(await t.store.complete(q, 'w1', [{ id, lockToken: token, result }])).toEqual(['completed']);
    const j = (await t.store.getJob(q, id))!;
    expect(j).toMatchObject({ status: 'completed', result, attempts: 1, workerId: 'w1' });
    expect(j.finishedAt).toBeGreaterThanOrEqual(job.startedAt!);
    expect(j.updatedAt).toBe(j.finishedAt);
    const k = t.keys(q);
    expect(await t.redis.zscore(k.active, id)).toBeNull();
    const ev = await events(q, id);
    expect(efta(ev)).toEqual([
      ['enqueued', '', 'waiting', 0],
      ['claimed', 'waiting', 'active', 1],
      ['completed', 'active', 'completed', 1],
    ]);
    expect(ev[2]).toMatchObject({ x: '1', w: 'w1', d: JSON.stringify(result), at: String(j.finishedAt) });
    expect(Number(ev[2].ms)).toBe(j.finishedAt! - job.startedAt!);
  });

  it('an undefined result is stored as null', async () => {
    const q = newQueue();
    const { id, token } = await claimOne(q);
    await t.store.complete(q, 'w1', [{ id, lockToken: token, result: undefined }]);
    expect((await t.store.getJob(q, id))!.result).toBeNull();
  });

  it('acks a batch, one code per job in order', async () => {
    const q = newQueue();
    await Promise.all([enq(q), enq(q), enq(q)]);
    const c = await t.store.claim(q, 3, 30_000, 'w1');
    const [a, b, d] = c.jobs;
    const snapB = await snapshot(q, b.id);
    const out = await t.store.complete(q, 'w1', [
      { id: a.id, lockToken: a.lockToken, result: 1 },
      { id: b.id, lockToken: 'wrong', result: 2 },
      { id: 'no-such-job', lockToken: 'x', result: 3 },
      { id: d.id, lockToken: d.lockToken, result: 4 },
    ]);
    expect(out).toEqual(['completed', 'lease_lost', 'not_found', 'completed']);
    const after = await snapshot(q, b.id);
    expect(after.hash).toEqual(snapB.hash);
    expect(after.a).toBe(snapB.a);
    expect((await events(q)).filter((e) => e.e === 'completed').map((e) => e.j)).toEqual([a.id, d.id]);
  });

  describe('refusals change nothing', () => {
    it('wrong lock token', async () => {
      const q = newQueue();
      const { id, token } = await claimOne(q);
      const before = await snapshot(q, id);
      expect(await t.store.complete(q, 'w1', [{ id, lockToken: token + 'x', result: 1 }])).toEqual(['lease_lost']);
      expect(await t.store.complete(q, 'w1', [{ id, lockToken: '', result: 1 }])).toEqual(['lease_lost']);
      expect(await snapshot(q, id)).toEqual(before);
    });

    it('stale token after the lease was reaped and the job re-claimed (C1)', async () => {
      const q = newQueue();
      const { id, stale, current } = await staleToken(q);
      const before = await snapshot(q, id);
      expect(await t.store.complete(q, 'w-old', [{ id, lockToken: stale, result: 'late' }])).toEqual(['lease_lost']);
      expect(await snapshot(q, id)).toEqual(before);
      expect(await t.store.complete(q, 'w-new', [{ id, lockToken: current, result: 'fresh' }])).toEqual(['completed']);
      expect(await t.store.complete(q, 'w-old', [{ id, lockToken: stale, result: 'later' }])).toEqual(['lease_lost']);
      expect((await t.store.getJob(q, id))!.result).toBe('fresh');
      expect(efta(await events(q, id))).toEqual([
        ['enqueued', '', 'waiting', 0],
        ['claimed', 'waiting', 'active', 1],
        ['stalled', 'active', 'waiting', 1],
        ['claimed', 'waiting', 'active', 2],
        ['completed', 'active', 'completed', 2],
      ]);
    });

    it('stale token while the job waits again after the reaper (no current holder)', async () => {
      const q = newQueue();
      const { id, token } = await claimOne(q, { maxAttempts: 3 }, 100);
      await sleep(150);
      await t.store.reapExpired(q, 10);
      const before = await snapshot(q, id);
      expect(before.hash.s).toBe('waiting');
      expect(await t.store.complete(q, 'w1', [{ id, lockToken: token, result: 1 }])).toEqual(['lease_lost']);
      expect(await snapshot(q, id)).toEqual(before);
    });

    it('wrong state: a waiting job, and a completed job acked with another token', async () => {
      const q = newQueue();
      const waiting = await enq(q, { priority: -1 });
      const { id, token } = await claimOne(q);
      const beforeW = await snapshot(q, waiting);
      expect(await t.store.complete(q, 'w1', [{ id: waiting, lockToken: 'x', result: 1 }])).toEqual(['lease_lost']);
      expect(await snapshot(q, waiting)).toEqual(beforeW);

      expect(await t.store.complete(q, 'w1', [{ id, lockToken: token, result: 'first' }])).toEqual(['completed']);
      const before = await snapshot(q, id);
      expect(await t.store.complete(q, 'w1', [{ id, lockToken: token + 'x', result: 'second' }])).toEqual(['lease_lost']);
      expect(await snapshot(q, id)).toEqual(before);
      expect((await events(q, id)).filter((e) => e.e === 'completed')).toHaveLength(1);
    });
  });

  describe('a repeated complete (same token: its first reply was lost) answers as the first and changes nothing (C26)', () => {
    it('completed, then the same ack again', async () => {
      const q = newQueue();
      const { id, token } = await claimOne(q);
      expect(await t.store.complete(q, 'w1', [{ id, lockToken: token, result: 'first' }])).toEqual(['completed']);
      const before = await snapshot(q, id);
      expect(await t.store.complete(q, 'w1', [{ id, lockToken: token, result: 'first' }])).toEqual(['completed']);
      expect(await t.store.complete(q, 'w1', [{ id, lockToken: token, result: 'second' }])).toEqual(['completed']);
      expect(await snapshot(q, id)).toEqual(before);
      expect((await t.store.getJob(q, id))!.result).toBe('first');
      expect((await events(q, id)).filter((e) => e.e === 'completed')).toHaveLength(1);
    });

    it('cancelled by the cancel its first ack met, then the same ack again', async () => {
      const q = newQueue();
      const { id, token } = await claimOne(q);
      expect(await t.store.cancel(q, id)).toBe('active');
      expect(await t.store.complete(q, 'w1', [{ id, lockToken: token, result: 1 }])).toEqual(['cancelled']);
      const before = await snapshot(q, id);
      expect(await t.store.complete(q, 'w1', [{ id, lockToken: token, result: 1 }])).toEqual(['cancelled']);
      expect(await snapshot(q, id)).toEqual(before);
      expect((await events(q, id)).filter((e) => e.e === 'cancelled')).toHaveLength(1);
    });

    it('never for a token whose attempt ended otherwise (failed, released, reaped)', async () => {
      const qf = newQueue();
      const failed = await claimOne(qf, { maxAttempts: 1 });
      await t.store.fail(qf, failed.id, failed.token, failInput({ retryable: false }));
      const qr = newQueue();
      const released = await claimOne(qr);
      await t.store.release(qr, 'w1', [{ id: released.id, lockToken: released.token }]);
      const qs = newQueue();
      const reaped = await claimOne(qs, { maxAttempts: 1 }, 100);
      await sleep(150);
      await t.store.reapExpired(qs, 10);
      for (const [q, j, status] of [[qf, failed, 'failed'], [qr, released, 'waiting'], [qs, reaped, 'failed']] as const) {
        const before = await snapshot(q, j.id);
        expect(before.hash.s).toBe(status);
        expect(await t.store.complete(q, 'w1', [{ id: j.id, lockToken: j.token, result: 1 }])).toEqual(['lease_lost']);
        expect(await snapshot(q, j.id)).toEqual(before);
      }
    });

    it('unknown job', async () => {
      const q = newQueue();
      expect(await t.store.complete(q, 'w1', [{ id: 'nope', lockToken: 'x', result: 1 }])).toEqual(['not_found']);
      expect(await t.redis.exists(jk(q, 'nope'))).toBe(0);
      expect(await t.redis.xlen(t.keys(q).events)).toBe(0);
    });
  });

  it('with a concurrency cap, completing wakes idle workers when jobs wait; without one it does not', async () => {
    const q = newQueue();
    const k = t.keys(q);
    await t.stores.queues.configure(q, { maxConcurrency: 1 });
    const { id, token } = await claimOne(q);
    await enq(q);
    await t.redis.del(k.wake);
    await t.store.complete(q, 'w1', [{ id, lockToken: token, result: 1 }]);
    expect(await t.redis.llen(k.wake)).toBe(1);

    const q2 = newQueue();
    const k2 = t.keys(q2);
    const o = await claimOne(q2);
    await enq(q2);
    await t.redis.del(k2.wake);
    await t.store.complete(q2, 'w1', [{ id: o.id, lockToken: o.token, result: 1 }]);
    expect(await t.redis.llen(k2.wake)).toBe(0);
  });
});

describe('fail', () => {
  it('retryable with a backoff delay: delayed until now + delay, one retry_scheduled event', async () => {
    const q = newQueue();
    const { id, token } = await claimOne(q, { maxAttempts: 3 });
    const before = await redisNow();
    expect(await t.store.fail(q, id, token, failInput({ delayMs: 5000, error: 'oops' }))).toBe('delayed');
    const after = await redisNow();
    const j = (await t.store.getJob(q, id))!;
    expect(j).toMatchObject({ status: 'delayed', attempts: 1, lastError: 'oops' });
    expect(j.runAt).toBeGreaterThanOrEqual(before + 5000);
    expect(j.runAt).toBeLessThanOrEqual(after + 5000);
    const k = t.keys(q);
    expect(await t.redis.zscore(k.delayed, id)).toBe(String(j.runAt));
    expect(await t.redis.zscore(k.active, id)).toBeNull();
    const ev = await events(q, id);
    expect(efta(ev.slice(2))).toEqual([['retry_scheduled', 'active', 'delayed', 1]]);
    expect(ev[2]).toMatchObject({ r: 'error', er: 'oops', w: 'w1', x: '1', ra: String(j.runAt) });
  });

  it('retryable without delay: straight back to waiting in its original place', async () => {
    const q = newQueue();
    const { id, token } = await claimOne(q, { maxAttempts: 3 });
    const k = t.keys(q);
    const scoreAtEnqueue = String((100 - 0) * 2 ** 44 + 1);
    await enq(q);
    expect(await t.store.fail(q, id, token, failInput())).toBe('waiting');
    expect(await t.redis.zscore(k.waiting, id)).toBe(scoreAtEnqueue);
    expect(efta((await events(q, id)).slice(2))).toEqual([['retry_scheduled', 'active', 'waiting', 1]]);
    expect((await t.store.claim(q, 1, 1000, 'w1')).jobs[0].id).toBe(id);
  });

  it('attempts spent: to the DLQ with one failed event (C7: attempts == maxAttempts)', async () => {
    const q = newQueue();
    const { id, token } = await claimOne(q, { maxAttempts: 1 });
    expect(await t.store.fail(q, id, token, failInput({ delayMs: 1000, error: 'fatal' }))).toBe('failed');
    const j = (await t.store.getJob(q, id))!;
    expect(j).toMatchObject({ status: 'failed', attempts: 1, maxAttempts: 1, lastError: 'fatal' });
    expect(await t.redis.zscore(t.keys(q).failed, id)).toBe(String(j.finishedAt));
    expect(await t.redis.zscore(t.keys(q).delayed, id)).toBeNull();
    const ev = await events(q, id);
    expect(efta(ev.slice(2))).toEqual([['failed', 'active', 'failed', 1]]);
    expect(ev[2]).toMatchObject({ r: 'error', er: 'fatal' });
  });

  it('unrecoverable (retryable false) goes to the DLQ even with attempts left', async () => {
    const q = newQueue();
    const { id, token } = await claimOne(q, { maxAttempts: 5 });
    expect(await t.store.fail(q, id, token, failInput({ retryable: false }))).toBe('failed');
    expect((await t.store.getJob(q, id))!.status).toBe('failed');
  });

  it('records the reason (timeout, decode_error)', async () => {
    // The retry is a minute away: the second claim must not promote it before its events are read.
    const q = newQueue();
    const a = await claimOne(q, { maxAttempts: 5 });
    await t.store.fail(q, a.id, a.token, failInput({ reason: 'timeout', error: 'timed out after 10 ms', delayMs: 60_000 }));
    const b = await claimOne(q, { maxAttempts: 5, priority: 1 });
    await t.store.fail(q, b.id, b.token, failInput({ reason: 'decode_error', retryable: false }));
    expect((await events(q, a.id)).pop()).toMatchObject({ e: 'retry_scheduled', r: 'timeout', er: 'timed out after 10 ms' });
    expect((await events(q, b.id)).pop()).toMatchObject({ e: 'failed', r: 'decode_error' });
  });

  it("reason 'cancelled' ends the job cancelled", async () => {
    const q = newQueue();
    const { id, token } = await claimOne(q, { maxAttempts: 5 });
    expect(await t.store.fail(q, id, token, failInput({ reason: 'cancelled', error: 'aborted' }))).toBe('cancelled');
    expect((await t.store.getJob(q, id))!.status).toBe('cancelled');
    expect(efta((await events(q, id)).slice(2))).toEqual([['cancelled', 'active', 'cancelled', 1]]);
    const k = t.keys(q);
    for (const set of [k.waiting, k.delayed, k.active, k.failed]) expect(await t.redis.zscore(set, id)).toBeNull();
  });

  it('a pending cancel request wins over a retry', async () => {
    const q = newQueue();
    const { id, token } = await claimOne(q, { maxAttempts: 5 });
    expect(await t.store.cancel(q, id)).toBe('active');
    expect(await t.store.fail(q, id, token, failInput({ delayMs: 100 }))).toBe('cancelled');
    expect(efta((await events(q, id)).slice(2))).toEqual([
      ['cancel_requested', 'active', 'active', 1],
      ['cancelled', 'active', 'cancelled', 1],
    ]);
  });

  it('a full retry cycle follows the backoff and ends in the DLQ (C9 shape)', async () => {
    const q = newQueue();
    const backoff = { type: 'exponential' as const, delayMs: 50, maxDelayMs: 1000, jitter: 'none' as const };
    const id = await enq(q, { maxAttempts: 3, backoff });
    const delays: number[] = [];
    for (let attempt = 1; attempt <= 3; attempt++) {
      let c = await t.store.claim(q, 1, 30_000, 'w1');
      for (let i = 0; c.jobs.length === 0 && i < 50; i++) {
        await sleep(20);
        c = await t.store.claim(q, 1, 30_000, 'w1');
      }
      const job = c.jobs[0];
      expect(job).toMatchObject({ id, attempts: attempt, executionSeq: attempt });
      const delayMs = computeBackoffDelay(job.backoff, job.attempts);
      delays.push(delayMs);
      const now = await redisNow();
      const status = await t.store.fail(q, id, job.lockToken, failInput({ delayMs, error: `fail ${attempt}` }));
      expect(status).toBe(attempt < 3 ? 'delayed' : 'failed');
      if (status === 'delayed') expect((await t.store.getJob(q, id))!.runAt - now).toBeGreaterThanOrEqual(delayMs);
    }
    expect(delays).toEqual([50, 100, 200]);
    expect((await t.store.getJob(q, id))!).toMatchObject({ status: 'failed', attempts: 3, lastError: 'fail 3' });
    expect(efta(await events(q, id))).toEqual([
      ['enqueued', '', 'waiting', 0],
      ['claimed', 'waiting', 'active', 1],
      ['retry_scheduled', 'active', 'delayed', 1],
      ['promoted', 'delayed', 'waiting', 1],
      ['claimed', 'waiting', 'active', 2],
      ['retry_scheduled', 'active', 'delayed', 2],
      ['promoted', 'delayed', 'waiting', 2],
      ['claimed', 'waiting', 'active', 3],
      ['failed', 'active', 'failed', 3],
    ]);
  });

  it('a retry to waiting wakes idle workers', async () => {
    const q = newQueue();
    const k = t.keys(q);
    const { id, token } = await claimOne(q, { maxAttempts: 2 });
    await t.redis.del(k.wake);
    await t.store.fail(q, id, token, failInput());
    expect(await t.redis.llen(k.wake)).toBe(1);
  });

  describe('refusals change nothing', () => {
    it('wrong lock token → LeaseLostError', async () => {
      const q = newQueue();
      const { id, token } = await claimOne(q);
      const before = await snapshot(q, id);
      const err = await t.store.fail(q, id, token + 'x', failInput()).catch((e) => e);
      expect(err).toBeInstanceOf(LeaseLostError);
      expect(err.code).toBe('lease_lost');
      expect(await snapshot(q, id)).toEqual(before);
    });

    it('stale token after the lease was reaped and the job re-claimed → LeaseLostError', async () => {
      const q = newQueue();
      const { id, stale, current } = await staleToken(q);
      const before = await snapshot(q, id);
      for (const retryable of [true, false]) {
        await expect(t.store.fail(q, id, stale, failInput({ retryable, workerId: 'w-old' }))).rejects.toThrow(LeaseLostError);
      }
      expect(await snapshot(q, id)).toEqual(before);
      expect(await t.store.fail(q, id, current, failInput({ retryable: false, workerId: 'w-new' }))).toBe('failed');
    });

    it('wrong state (waiting, completed, failed) → LeaseLostError', async () => {
      const q = newQueue();
      const waiting = await enq(q, { priority: -5 });
      const done = await claimOne(q);
      await t.store.complete(q, 'w1', [{ id: done.id, lockToken: done.token, result: 1 }]);
      const dead = await claimOne(q, { maxAttempts: 1 });
      await t.store.fail(q, dead.id, dead.token, failInput());
      for (const [id, token] of [[waiting, 'x'], [done.id, done.token], [dead.id, dead.token]]) {
        const before = await snapshot(q, id);
        await expect(t.store.fail(q, id, token, failInput())).rejects.toThrow(LeaseLostError);
        expect(await snapshot(q, id)).toEqual(before);
      }
    });

    it('unknown job → JobNotFoundError', async () => {
      const q = newQueue();
      const err = await t.store.fail(q, 'missing', 'x', failInput()).catch((e) => e);
      expect(err).toBeInstanceOf(JobNotFoundError);
      expect(err.jobId).toBe('missing');
      expect(await t.redis.exists(jk(q, 'missing'))).toBe(0);
      expect(await t.redis.xlen(t.keys(q).events)).toBe(0);
    });
  });
});

describe('complete/fail: audit trail', () => {
  it('every event written in this file is an allowed transition', async () => {
    for (const q of queues) expectLegal(await events(q));
  });
});
