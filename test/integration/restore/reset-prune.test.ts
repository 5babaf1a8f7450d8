/**
 * A queue the restore watch found rewound is reset (lua/resetQueue-3.lua:
 * marker dropped, fence 'resetting', the mirror lock handed to the watch),
 * then pruned and restored under that lock. When the watch dies between the
 * reset and the restore, whoever restores the queue next (here: another
 * process's restorer once the lock expired) prunes first, so a job
 * PostgreSQL knows as completed never comes back from the snapshot; a job
 * PostgreSQL never heard of stays; a prune by a process that does not hold
 * the lock changes nothing. Real Redis and PostgreSQL.
 */
import { MirrorWriter } from '../../../src/mirror/mirror-writer';
import { QueueRestorer } from '../../../src/restore/restore';
import { normalizeEnqueue } from '../../../src/core/job-options';
import { openTestDb, TestDb } from '../../support/postgres';
import { openStore, sleep, TestStore } from '../../support/redis';

let t: TestStore;
let db: TestDb;
beforeAll(async () => {
  t = await openStore('reset-prune');
  db = await openTestDb('reset_prune');
});
afterAll(async () => {
  await t?.close();
  await db?.close();
});

test('an interrupted reset is finished by the next restore: the snapshot copy of a completed job is pruned, not run again', async () => {
  const q = 'rp';
  const k = t.keys(q);
  const restorer = new QueueRestorer(db.dataSource, t.stores, { lockWaitMs: 3000 });
  const w = new MirrorWriter(t.stores, db.dataSource, { writerId: 'rp-w', onAcquire: (queue) => restorer.ensureQueue(queue, { lockToken: 'rp-w' }).then(() => undefined) });
  const drain = async () => {
    await (w as any).refreshOwnership();
    while ((await w.runOnce()) > 0);
  };
  const enq = async (payload: Record<string, number>) => (await t.store.enqueue([normalizeEnqueue({ queue: q, type: 'x', payload }, 1e6)]))[0].id;

  const done = await enq({ a: 1 });
  const waiting = await enq({ b: 1 });
  await drain();
  const epoch = (await t.stores.restore.epoch(q))!;
  expect(epoch).not.toBeNull();

  // The "snapshot": the job hash and waiting set as they are now.
  const snapHash = await t.redis.dumpBuffer(`${k.base}job:${done}`);
  const snapWaiting = await t.redis.dumpBuffer(k.waiting);
  // Later, in the lost timeline: `done` runs and completes, and PostgreSQL records it.
  const claimed = await t.store.claim(q, 1, 60_000, 'w1');
  expect(claimed.jobs.map((j) => j.id)).toEqual([done]);
  await t.store.complete(q, 'w1', [{ id: done, lockToken: claimed.jobs[0].lockToken, result: null }]);
  await drain();
  await w.stop();
  expect((await db.dataSource.query(`SELECT status FROM jobs WHERE id = $1`, [done]))[0].status).toBe('completed');
  // Redis comes back from the snapshot: `done` waiting again.
  await t.redis.restore(`${k.base}job:${done}`, 0, snapHash!, 'REPLACE');
  await t.redis.restore(k.waiting, 0, snapWaiting!, 'REPLACE');
  // Accepted after Redis came back: PostgreSQL has not heard of it.
  const fresh = await enq({ c: 1 });
  expect((await t.redis.zrange(k.waiting, 0, -1)).sort()).toEqual([done, waiting, fresh].sort());

  // The watch resets the queue, then dies before pruning and restoring.
  expect(await t.stores.restore.reset(q, epoch, { token: 'dead-watch', ttlMs: 300 })).toBe(true);
  expect(await t.stores.restore.reset(q, epoch, { token: 'other-watch', ttlMs: 300 })).toBe(false); // one replica resets
  expect(await t.stores.restore.resetting(q)).toBe(true);
  expect(await t.stores.restore.prune(q, { token: 'not-the-holder', ttlMs: 300 }, [done])).toBe(-1);
  expect(await t.redis.exists(`${k.base}job:${done}`)).toBe(1);
  await sleep(400); // its lock expires

  const r = await restorer.ensureQueue(q);
  expect(r.action).toBe('restored');
  expect(r.pruned).toBe(2); // `done` and `waiting` (PostgreSQL knows both); `fresh` stays
  expect(r.counts.waiting).toBe(1); // `waiting`, back from PostgreSQL
  const now = await t.redis.zrange(k.waiting, 0, -1);
  expect(now.sort()).toEqual([waiting, fresh].sort());
  expect(await t.redis.exists(`${k.base}job:${done}`)).toBe(0);
  expect(await t.stores.restore.prune(q, { token: 'dead-watch', ttlMs: 300 }, [fresh])).toBe(-1); // marker back: no more pruning
});
