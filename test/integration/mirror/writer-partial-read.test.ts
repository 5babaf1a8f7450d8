/**
 * Issue 34 (third probe), defect 2 shape (c): a job whose timeline says
 * `enqueued → claimed → completed` while its `jobs` row says `waiting`.
 *
 * The mirror writer reads all its queues in one round (one XREADGROUP each).
 * When one queue's read failed — after a FLUSHALL its consumer group is
 * missing until the restore makes it again, while another queue's is back —
 * the round threw and dropped what the other reads had delivered: those
 * entries stayed pending under the writer, unwritten, while the queue's
 * newer entries were read and written; taken back later (takeOver,
 * sweepOrphans), the job's insert landed after its patches and the row
 * kept the state of the insert. Real Redis (the failing read is a real
 * NOGROUP: the group destroyed) and PostgreSQL.
 */
import { MirrorWriter } from '../../../src/mirror/mirror-writer';
import { MIRROR_GROUP } from '../../../src/redis/keys';
import { openTestDb, TestDb } from '../../support/postgres';
import { openStore, TestStore } from '../../support/redis';
import { scriptHelpers } from '../../support/scripts';
import { normalizeEnqueue } from '../../../src/core/job-options';

let t: TestStore;
let db: TestDb;
beforeAll(async () => {
  t = await openStore('partial-read');
  db = await openTestDb('partial_read');
});
afterAll(async () => {
  await t.close();
  await db.close();
});

const { newQueue, enq } = scriptHelpers(() => t, 'pr');

test("one queue's failing read does not drop what the others delivered: a job's row ends in the state its timeline ends in", async () => {
  const [a, b] = [newQueue(), newQueue()];
  for (const q of [a, b]) await t.stores.queues.register(q);
  const warns: string[] = [];
  const log = { debug() {}, info() {}, error() {}, warn: (_o: object, msg?: string) => void warns.push(msg ?? '') };
  const w = new MirrorWriter(t.stores, db.dataSource, { writerId: 'pr-w' }, log);
  const writer = w as unknown as { refreshOwnership(): Promise<void>; takeOver(q: string, minIdleMs?: number): Promise<void> };
  await writer.refreshOwnership();

  // b's consumer group is gone (as after a FLUSHALL, until the restore makes it again); a's is there.
  await t.redis.xgroup('DESTROY', t.keys(b).events, MIRROR_GROUP);
  const id = await enq(a);
  // The round reads a (delivering the job's `enqueued`) and fails on b.
  await w.runOnce().catch(() => 0);

  // b's group is back; the job runs and completes; the writer mirrors what is new.
  await t.stores.mirror.ensureGroup(b);
  const c = await t.store.claim(a, 1, 30_000, 'w1');
  expect(c.jobs.map((j) => j.id)).toEqual([id]);
  await t.store.complete(a, 'w1', [{ id, lockToken: c.jobs[0].lockToken, result: { ok: true } }]);
  while ((await w.runOnce()) > 0);
  // What the writer left pending is taken back, as its next takeover or orphan sweep does.
  await writer.takeOver(a);
  while ((await w.runOnce()) > 0);
  await w.stop();

  const timeline = await db.dataSource.query(`SELECT event FROM job_timeline WHERE job_id = $1 ORDER BY stream_ms, stream_seq`, [id]);
  expect(timeline.map((r: { event: string }) => r.event)).toEqual(['enqueued', 'claimed', 'completed']);
  expect(await db.dataSource.query(`SELECT status, attempts FROM jobs WHERE id = $1`, [id])).toEqual([{ status: 'completed', attempts: 1 }]);
  // Said once, naming the queue's failure, not the batch's.
  expect(warns.filter((m) => m.includes('reading a queue failed'))).toHaveLength(1);
});

test('a round whose every read fails still writes the entries held for it (withCarry): they never land after the restore those reads wait for', async () => {
  // A store of its own: the writer owns this one queue only, so every read of the round fails.
  const t2 = await openStore('partial-read-carry');
  const a = 'prc';
  await t2.stores.queues.register(a);
  const w = new MirrorWriter(t2.stores, db.dataSource, { writerId: 'pr-carry' });
  type Batch = { entries: { id: string; fields: Record<string, string> }[] };
  const writer = w as unknown as { refreshOwnership(): Promise<void>; nextBatch(hold?: boolean): Promise<Batch>; write(p: Batch): Promise<unknown>; carry: unknown[] };
  await writer.refreshOwnership();
  const [{ id }] = await t2.store.enqueue([normalizeEnqueue({ queue: a, type: 't' }, 1e6)]);
  const c = await t2.store.claim(a, 1, 30_000, 'w1');
  expect(c.jobs.map((j) => j.id)).toEqual([id]);
  // The loop's read holds the job's `claimed` (its last entry) for the next batch, to meet its `completed`.
  const first = await writer.nextBatch(true);
  expect(first.entries.map((e) => e.fields.e)).toEqual(['enqueued']);
  expect(writer.carry).toHaveLength(1);
  await writer.write(first);
  // Redis loses the stream (FLUSHALL): every read of the next round fails; the held entry goes now.
  await t2.redis.xgroup('DESTROY', t2.keys(a).events, MIRROR_GROUP);
  const second = await writer.nextBatch(true);
  expect(second.entries.map((e) => e.fields.e)).toEqual(['claimed']);
  await writer.write(second);
  expect(await db.dataSource.query(`SELECT status FROM jobs WHERE id = $1`, [id])).toEqual([{ status: 'active' }]);
  expect(writer.carry).toEqual([]);
  // Nothing held any more: a round that reads nothing fails as before (the loop's backoff).
  await expect(writer.nextBatch(true)).rejects.toThrow(/NOGROUP/);
  await t2.stores.mirror.ensureGroup(a);
  await w.stop();
  await t2.close();
});
