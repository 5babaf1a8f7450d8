/**
 * API.md v1.3: a lease ends at its `leaseExpiresAt` (Redis time). After that,
 * heartbeat, complete, fail and release with its token answer `lease_lost`,
 * whether or not the reaper has passed (lua/includes/lease.lua in
 * extendLocks, completeJobs, failJob, releaseJobs and updateProgress), and the
 * job is the reaper's: stalled, the attempt counted. On real Redis, with no
 * reaper running: every call here comes before the reaper.
 */
import { LeaseLostError } from '../../../src/core/errors';
import { openStore, sleep, TestStore } from '../../support/redis';
import { efta, expectLegal, scriptHelpers } from '../../support/scripts';

let t: TestStore;
beforeAll(async () => {
  t = await openStore('lease-expiry');
});
afterAll(async () => t.close());

const { queues, newQueue, claimOne, events, snapshot, redisNow } = scriptHelpers(() => t, 'le');
const lease = (id: string, lockToken: string) => ({ id, lockToken });

/** Each call a holder can make with its token; every one must answer lease_lost once the lease has ended. */
const CALLS: [string, (q: string, id: string, token: string) => Promise<unknown>][] = [
  ['heartbeat', async (q, id, token) => (await t.store.extendLeases(q, [lease(id, token)], 30_000)).statuses[0]],
  ['complete', async (q, id, token) => (await t.store.complete(q, 'w1', [{ id, lockToken: token, result: 'late' }]))[0]],
  [
    'fail',
    (q, id, token) =>
      t.store.fail(q, id, token, { error: 'late', retryable: true, delayMs: 0, reason: 'error', workerId: 'w1' }).catch((e) => (e instanceof LeaseLostError ? 'lease_lost' : Promise.reject(e))),
  ],
  ['release', async (q, id, token) => (await t.store.release(q, 'w1', [lease(id, token)], { reason: 'worker' }))[0]],
  ['progress', (q, id, token) => t.store.progress(q, id, token, 'w1', 50, [{ level: 'info', message: 'late' }]).catch((e) => (e instanceof LeaseLostError ? 'lease_lost' : Promise.reject(e)))],
];

describe('after the lease has ended, before the reaper', () => {
  it.each(CALLS)('%s answers lease_lost and changes nothing; the reaper then counts the attempt (stalled)', async (_name, call) => {
    const q = newQueue();
    const { id, token } = await claimOne(q, { maxAttempts: 1 }, 100);
    await sleep(150);
    const before = await snapshot(q, id);
    expect(await call(q, id, token)).toBe('lease_lost');
    expect(await snapshot(q, id)).toEqual(before);
    // maxAttempts 1: no refund happened, so the reaper dead-letters it (a release had run it again).
    expect((await t.store.reapExpired(q, 10)).reaped).toBe(1);
    expect((await t.store.getJob(q, id))!).toMatchObject({ status: 'failed', attempts: 1 });
    expect(efta((await events(q, id)).slice(2))).toEqual([
      ['stalled', 'active', 'active', 1],
      ['failed', 'active', 'failed', 1],
    ]);
  });

  it.each(CALLS)('%s: the lease has ended once the Redis clock reaches its expiry (the active score set to Redis now)', async (_name, call) => {
    const q = newQueue();
    const { id, token } = await claimOne(q, { maxAttempts: 3 }, 60_000);
    // The lease expiry is the active set's score: moved to Redis's present, the lease has just ended.
    await t.redis.zadd(t.keys(q).active, 'XX', await redisNow(), id);
    const before = await snapshot(q, id);
    expect(await call(q, id, token)).toBe('lease_lost');
    expect(await snapshot(q, id)).toEqual(before);
  });

  it.each(CALLS)('%s with a lease still running is accepted (the control)', async (name, call) => {
    const q = newQueue();
    const { id, token } = await claimOne(q, { maxAttempts: 3 }, 60_000);
    await t.redis.zadd(t.keys(q).active, 'XX', (await redisNow()) + 5_000, id);
    const expected = { heartbeat: 'ok', complete: 'completed', fail: 'waiting', release: 'released', progress: undefined }[name];
    expect(await call(q, id, token)).toBe(expected);
  });

  it('a complete that landed before the lease ended is still answered completed when sent again after it (the repeat changes nothing)', async () => {
    const q = newQueue();
    const { id, token } = await claimOne(q, {}, 100);
    expect(await t.store.complete(q, 'w1', [{ id, lockToken: token, result: 1 }])).toEqual(['completed']);
    await sleep(150);
    const before = await snapshot(q, id);
    expect(await t.store.complete(q, 'w1', [{ id, lockToken: token, result: 1 }])).toEqual(['completed']);
    expect(await snapshot(q, id)).toEqual(before);
  });

  it('a pending cancel does not let an ended lease complete: the reaper cancels the job', async () => {
    const q = newQueue();
    const { id, token } = await claimOne(q, { maxAttempts: 3 }, 100);
    await t.store.cancel(q, id);
    await sleep(150);
    expect(await t.store.complete(q, 'w1', [{ id, lockToken: token, result: 1 }])).toEqual(['lease_lost']);
    expect((await t.store.reapExpired(q, 10)).reaped).toBe(1);
    expect((await t.store.getJob(q, id))!.status).toBe('cancelled');
  });

  it('a batch of acks is judged per job: the ended lease refused, the running one completed', async () => {
    const q = newQueue();
    const ended = await claimOne(q, {}, 100);
    const running = await claimOne(q, {}, 60_000);
    await sleep(150);
    const out = await t.store.complete(q, 'w1', [
      { id: ended.id, lockToken: ended.token, result: 1 },
      { id: running.id, lockToken: running.token, result: 2 },
    ]);
    expect(out).toEqual(['lease_lost', 'completed']);
    const hb = await t.store.extendLeases(q, [lease(ended.id, ended.token)], 30_000);
    expect(hb.statuses).toEqual(['lease_lost']);
    expect(await t.redis.zscore(t.keys(q).active, ended.id)).not.toBeNull();
  });
});

describe('lease expiry: audit trail', () => {
  it('every event written in this file is an allowed transition', async () => {
    for (const q of queues) expectLegal(await events(q));
  });
});
