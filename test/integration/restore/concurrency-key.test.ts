/**
 * Restore keeps a job's concurrency key (issue 20): the key the mirror
 * wrote to `jobs.concurrency_key` goes back into Redis with the job when
 * Redis lost its data (waiting, delayed, active — back to waiting — and
 * dead-lettered jobs), so the restored jobs are in their key's lane again
 * and a retry from the DLQ keeps it. A private redis-server, flushed.
 */
import { MirrorWriter } from '../../../src/mirror/mirror-writer';
import { QueueRestorer } from '../../../src/restore/restore';
import { normalizeEnqueue, type EnqueueInput } from '../../../src/core/job-options';
import { openTestDb, TestDb } from '../../support/postgres';
import { openStore, TestStore } from '../../support/redis';
import { RedisServer, removeDir, startRedisServer, stopAllRedisServers } from '../../support/redis-server';

jest.setTimeout(120_000);

let server: RedisServer;
let t: TestStore;
let db: TestDb;
beforeAll(async () => {
  server = await startRedisServer({ name: 'restore-ck' });
  t = await openStore('restore-ck', server.url);
  db = await openTestDb('restore_ck');
});
afterAll(async () => {
  await t?.close();
  await db?.close();
  await stopAllRedisServers();
  removeDir(server?.opts.dir);
});

const enq = (input: EnqueueInput) => t.store.enqueue([normalizeEnqueue(input, 1e6)]).then((r) => r[0].id);

test('waiting, delayed, active and dead-lettered jobs come back with their concurrency key; a DLQ retry keeps it', async () => {
  const q = 'rck';
  const restorer = new QueueRestorer(db.dataSource, t.stores, { chunkSize: 3 });
  const w = new MirrorWriter(t.stores, db.dataSource, { writerId: 'rck', onAcquire: (queue) => restorer.ensureQueue(queue, { lockToken: 'rck' }).then(() => undefined) });
  const toFail = await enq({ queue: q, type: 'f', maxAttempts: 1, concurrencyKey: 'dead/key', priority: 50 });
  const toHold = await enq({ queue: q, type: 'a', concurrencyKey: 'busy', priority: 40 });
  const claimed = await t.store.claim(q, 2, 60_000, 'w1');
  expect(claimed.jobs.map((j) => j.id).sort()).toEqual([toFail, toHold].sort());
  const failLease = claimed.jobs.find((j) => j.id === toFail)!.lockToken;
  expect(await t.store.fail(q, toFail, failLease, { error: 'boom', retryable: false, delayMs: 0, reason: 'error', workerId: 'w1' })).toBe('failed');
  const waiting = [await enq({ queue: q, type: 'w', concurrencyKey: 'tenant é 1' }), await enq({ queue: q, type: 'w', concurrencyKey: 'tenant é 1' }), await enq({ queue: q, type: 'w' })];
  const delayed = await enq({ queue: q, type: 'd', delayMs: 60_000, concurrencyKey: 'later' });
  const want = new Map<string, string | null>([
    [toFail, 'dead/key'],
    [toHold, 'busy'],
    [waiting[0], 'tenant é 1'],
    [waiting[1], 'tenant é 1'],
    [waiting[2], null],
    [delayed, 'later'],
  ]);
  await (w as unknown as { refreshOwnership(): Promise<void> }).refreshOwnership();
  while ((await w.runOnce()) > 0);
  await w.stop();
  const pg: { id: string; concurrency_key: string | null }[] = await db.dataSource.query(`SELECT id, concurrency_key FROM jobs WHERE queue = $1`, [q]);
  expect(new Map(pg.map((r) => [r.id, r.concurrency_key]))).toEqual(want);

  await t.redis.flushall();
  const [report] = await restorer.checkAll();
  expect(report).toMatchObject({ queue: q, action: 'restored', counts: { waiting: 3, delayed: 1, active: 1, failed: 1 } });
  for (const [id, key] of want) expect([id, (await t.store.getJob(q, id))?.concurrencyKey]).toEqual([id, key]);
  // In their keys' lanes again: the store counts them per key.
  const keys = await t.stores.queues.keys(q, 10);
  expect(keys.find((k) => k.key === 'tenant é 1')).toMatchObject({ waiting: 2 });
  expect(keys.find((k) => k.key === 'busy')).toMatchObject({ waiting: 1 });
  // Retried from the restored DLQ: still keyed.
  expect(await t.stores.deadLetters.retry(q, toFail)).toBe('waiting');
  expect((await t.store.getJob(q, toFail))?.concurrencyKey).toBe('dead/key');
});
