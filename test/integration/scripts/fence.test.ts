/**
 * The restore fence (lua/includes/fence.lua, src/restore/loss-watch.ts): a
 * queue marked checked on another Redis server (its meta 'vr' is not this
 * server's run id — what a restart, a failover or an older snapshot looks
 * like) claims, promotes, reaps and mirrors nothing, and refuses cancel, DLQ
 * retries, revives and purges with 503 `unavailable` (nothing written),
 * until the watch verifies it on this server; a queue never checked is not
 * fenced. Real Redis.
 */
import { UnavailableError } from '../../../src/core/errors';
import { normalizeEnqueue } from '../../../src/core/job-options';
import { openStore, sleep, TestStore } from '../../support/redis';

let t: TestStore;
beforeAll(async () => {
  t = await openStore('fence');
});
afterAll(async () => {
  await t?.close();
});

test('a queue checked on another server moves nothing until verified here; then everything goes on', async () => {
  const q = 'fq';
  const k = t.keys(q);
  const enq = async (input: object) => (await t.store.enqueue([normalizeEnqueue({ queue: q, type: 'x', ...input }, 1e6)]))[0].id;
  const waiting = await enq({ payload: { a: 1 } });
  const toCancel = await enq({ payload: { c: 1 } });
  const dead = await enq({ payload: { d: 1 }, maxAttempts: 1, priority: 10 });
  const c = await t.store.claim(q, 1, 60_000, 'w');
  expect(c.jobs[0].id).toBe(dead);
  await t.store.fail(q, dead, c.jobs[0].lockToken, { error: 'x', retryable: false, delayMs: 0, reason: 'error', workerId: 'w' });
  const short = await t.store.claim(q, 1, 1, 'w'); // a lease that ends at once
  expect(short.jobs.map((j) => j.id)).toEqual([waiting]);
  await enq({ payload: { later: 1 }, delayMs: 100 });
  await sleep(150); // the delayed job is due
  const before = await t.redis.xlen(k.events);

  // Checked on a server that is not this one.
  await t.redis.hset(k.meta, 'vr', 'f'.repeat(40));
  const claim = await t.store.claimForWorker(q, 5, 60_000, 'w');
  expect(claim.jobs).toHaveLength(0);
  expect(claim.block).toBe('paused');
  expect((await t.store.promoteDelayed(q, 100)).promoted).toBe(0);
  expect((await t.store.reapExpired(q, 100)).reaped).toBe(0);
  await expect(t.store.cancel(q, toCancel)).rejects.toBeInstanceOf(UnavailableError);
  await expect(t.stores.deadLetters.retry(q, dead)).rejects.toBeInstanceOf(UnavailableError);
  await expect(t.stores.deadLetters.purge(q, 100)).rejects.toBeInstanceOf(UnavailableError);
  await t.stores.mirror.ensureGroup(q);
  expect(await t.stores.mirror.readNew(q, 'm', 100)).toEqual([]);
  expect(await t.redis.xlen(k.events)).toBe(before); // nothing written
  expect(await t.redis.zrange(k.waiting, 0, -1)).toEqual([toCancel]);
  expect(await t.redis.zscore(k.active, waiting)).not.toBeNull(); // its lease ended, not reaped

  // Verified on this server: the fence lifts.
  const epoch = 'e-' + Date.now();
  await t.redis.set(k.epoch, epoch);
  expect(await t.stores.restore.verify(q, epoch, null)).toBe('ok');
  expect(await t.stores.restore.verify(q, epoch, null, 'not-this-server')).toBe('changed');
  expect(await t.store.cancel(q, toCancel)).toBe('cancelled');
  expect((await t.store.reapExpired(q, 100)).reaped).toBe(1);
  expect((await t.store.promoteDelayed(q, 100)).promoted).toBe(1);
  expect(await t.stores.deadLetters.retry(q, dead)).toBe('waiting');
  const after = await t.store.claimForWorker(q, 10, 60_000, 'w');
  expect(after.block).not.toBe('paused');
  expect(after.jobs.length).toBeGreaterThanOrEqual(1); // the reaped job first, alone (its lease expired: solo)
  await t.stores.mirror.ensureGroup(q);
  expect((await t.stores.mirror.readNew(q, 'm', 1000)).length).toBeGreaterThan(0);
});

test('a queue never checked is not fenced', async () => {
  const q = 'fq-none';
  const id = (await t.store.enqueue([normalizeEnqueue({ queue: q, type: 'x', payload: {} }, 1e6)]))[0].id;
  expect(await t.redis.hexists(t.keys(q).meta, 'vr')).toBe(0);
  expect((await t.store.claimForWorker(q, 1, 60_000, 'w')).jobs.map((j) => j.id)).toEqual([id]);
});
