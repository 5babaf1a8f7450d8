/**
 * The mirror writer's two cheap paths, on real Redis and PostgreSQL, each
 * with the case that must take the safe path instead:
 * - acknowledging a batch trims the stream (XTRIM MINID) when nothing older
 *   is pending, and deletes entry by entry (XDEL) when something is, so no
 *   entry that is not mirrored ever leaves the stream (lua/ackEvents-1.lua);
 * - a fresh batch (read with `>`) is inserted without ON CONFLICT, and when a
 *   row exists all the same it is written again in the idempotent form:
 *   nothing lost, nothing doubled.
 */
import { MirrorWriter } from '../../../src/mirror/mirror-writer';
import { MIRROR_GROUP } from '../../../src/redis/keys';
import { planBatch, UNIQUE_VIOLATION, writeBatch } from '../../../src/mirror/batch-writer';
import { project } from '../../../src/mirror/projection';
import { compareIds, nextStreamId } from '../../../src/core/stream-ids';
import { normalizeEnqueue } from '../../../src/core/job-options';
import { captureStreams } from '../../support/mirror';
import { openTestDb, TestDb } from '../../support/postgres';
import { openStore, TestStore } from '../../support/redis';

let t: TestStore;
let db: TestDb;
beforeAll(async () => {
  t = await openStore('audit-ack');
  db = await openTestDb('ackfresh');
});
afterAll(async () => {
  await t.close();
  await db.close();
});

/** A stream of `n` entries with the audit group on it. */
const queueOfKey = new Map<string, string>();
async function stream(name: string, n: number): Promise<{ key: string; ids: string[] }> {
  const key = t.keys(`ack-${name}`).events;
  queueOfKey.set(key, `ack-${name}`);
  const ids: string[] = [];
  for (let i = 0; i < n; i++) ids.push((await t.redis.xadd(key, '*', 'e', 'x', 'i', String(i)))!);
  await t.redis.xgroup('CREATE', key, MIRROR_GROUP, '0');
  return { key, ids };
}

const read = async (key: string, consumer: string, count: number): Promise<string[]> => {
  const r = (await (t.redis as any).xreadgroup('GROUP', MIRROR_GROUP, consumer, 'COUNT', count, 'STREAMS', key, '>')) as [string, [string, string[]][]][] | null;
  return r ? r[0][1].map(([id]) => id) : [];
};

const ack = (key: string, ids: string[]) => t.stores.mirror.ack(queueOfKey.get(key)!, ids);

const left = async (key: string) => (await t.redis.xrange(key, '-', '+')).map(([id]) => id);

describe('ackEvents', () => {
  test('nothing older pending: the batch is trimmed; what is read ahead and what is not delivered yet stay', async () => {
    const { key, ids } = await stream('trim', 30);
    const batch = await read(key, 'w', 10);
    const ahead = await read(key, 'w', 10);
    expect(batch).toEqual(ids.slice(0, 10));
    expect(await ack(key, batch)).toBe(1);
    expect(await left(key)).toEqual(ids.slice(10));
    expect(await read(key, 'w', 100)).toEqual(ids.slice(20)); // never delivered: still there, still delivered
    const [pending] = (await t.redis.xpending(key, MIRROR_GROUP)) as [number];
    expect(pending).toBe(20);
    expect(await ack(key, ahead)).toBe(1);
    expect(await left(key)).toEqual(ids.slice(20));
  });

  test('an older entry still pending (another writer, a retried batch): entries are deleted one by one, the older ones stay', async () => {
    const { key, ids } = await stream('xdel', 25);
    const slow = await read(key, 'slow', 10);
    const fast = await read(key, 'fast', 10);
    expect(await ack(key, fast)).toBe(0);
    expect(await left(key)).toEqual([...ids.slice(0, 10), ...ids.slice(20)]);
    // The slow writer's batch is now the oldest: trimming it takes nothing else.
    expect(await ack(key, slow)).toBe(1);
    expect(await left(key)).toEqual(ids.slice(20));
  });

  test('a batch from an earlier incarnation of the group (Redis lost it; made again at 0) is deleted by id, not trimmed', async () => {
    const { key, ids } = await stream('stale', 8);
    await read(key, 'w', 8);
    // The group is lost and made again at '0': nothing of the stream is
    // delivered in it. A writer still holding a batch of the old group acks it.
    await t.redis.xgroup('DESTROY', key, MIRROR_GROUP);
    await t.redis.xgroup('CREATE', key, MIRROR_GROUP, '0');
    expect(await ack(key, ids.slice(4))).toBe(0);
    expect(await left(key)).toEqual(ids.slice(0, 4)); // never delivered in this group: kept
    expect(await read(key, 'w2', 100)).toEqual(ids.slice(0, 4));
  });

  test('a batch out of id order (taken over and sorted) trims up to its greatest id only', async () => {
    const { key, ids } = await stream('order', 12);
    const batch = await read(key, 'w', 6);
    expect(await ack(key, [...batch].reverse())).toBe(1);
    expect(await left(key)).toEqual(ids.slice(6));
  });

  test('compareIds orders stream ids numerically, whatever their lengths', () => {
    const sorted = ['0-0', '0-1', '0-10', '9-2', '10-0', '10-9', '10-10', '1796019289411-2', '1796019289411-12', '18446744073709551615-18446744073709551615'];
    const shuffled = [...sorted].reverse();
    expect(shuffled.sort(compareIds)).toEqual(sorted);
    expect(nextStreamId('5-9')).toBe('5-10');
    expect(nextStreamId('1796019289411-9007199254740993')).toBe('1796019289411-9007199254740994'); // past 2^53: exact
  });
});

describe('fresh batches', () => {
  test('the fresh form refuses a row that exists (23505) and writes nothing; the idempotent form takes it', async () => {
    const q = 'fresh-unit';
    await t.store.enqueue([normalizeEnqueue({ type: 'x', queue: q }, 1e6), normalizeEnqueue({ type: 'x', queue: q }, 1e6)]);
    const entries = await captureStreams(t.redis, t, [q]);
    await writeBatch(db.dataSource, project(entries.slice(0, 1)), true);
    await expect(writeBatch(db.dataSource, project(entries), true)).rejects.toMatchObject({ code: UNIQUE_VIOLATION });
    const count = async () => (await db.dataSource.query(`SELECT count(*)::int AS n FROM job_timeline WHERE queue = $1`, [q]))[0].n;
    expect(await count()).toBe(1); // the failed batch wrote nothing, not even its second entry
    await writeBatch(db.dataSource, project(entries), false);
    expect(await count()).toBe(2);
    // The history rows: no ON CONFLICT in the fresh form (the queue's stream-top row is an upsert in both forms).
    const history = (fresh: boolean) => planBatch(project(entries), fresh).filter((s) => !s.sql.includes('queue_stream_tops'));
    expect(history(true).some((s) => /ON CONFLICT/.test(s.sql))).toBe(false);
    expect(history(false).filter((s) => /ON CONFLICT/.test(s.sql)).length).toBe(2);
  });

  test('the writer meets rows already mirrored in a fresh read: it falls back, every event once, the stream drained', async () => {
    const q = 'fresh-writer';
    const t = await openStore('audit-fresh-w'); // its own prefix: no other test's queue in the writer's batches
    const ids = (await t.store.enqueue(Array.from({ length: 20 }, () => normalizeEnqueue({ type: 'x', queue: q }, 1e6)))).map((r) => r.id);
    // Half of them mirrored already (as when Redis comes back from an older
    // snapshot and delivers mirrored entries again): the writer reads them
    // all with `>` and must not fail on them for good, nor write them twice.
    const entries = await captureStreams(t.redis, t, [q]);
    await writeBatch(db.dataSource, project(entries.slice(0, 10)), false);
    const w = new MirrorWriter(t.stores, db.dataSource, { writerId: 'fresh-w' });
    let n = 0;
    try {
      await (w as any).refreshOwnership();
      for (let k; (k = await w.runOnce()) > 0; ) n += k;
    } finally {
      await w.stop();
      if (!n) await t.close();
    }
    expect(n).toBe(20);
    expect(w.stats.freshRetries).toBe(1);
    const [{ events }] = await db.dataSource.query(`SELECT count(*)::int AS events FROM job_timeline WHERE queue = $1`, [q]);
    expect(events).toBe(20);
    const rows = await db.dataSource.query(`SELECT id::text AS id FROM jobs WHERE queue = $1 ORDER BY id`, [q]);
    expect(rows.map((r: { id: string }) => r.id)).toEqual([...ids].sort());
    expect(await t.redis.xlen(t.keys(q).events)).toBe(0);
    await t.close();
  });

  test('an ordinary drain takes the fresh path only', async () => {
    const q = 'fresh-plain';
    const t = await openStore('audit-fresh-plain');
    await t.store.enqueue(Array.from({ length: 50 }, () => normalizeEnqueue({ type: 'x', queue: q }, 1e6)));
    const w = new MirrorWriter(t.stores, db.dataSource, { writerId: 'plain-w', batchSize: 20 });
    await (w as any).refreshOwnership();
    let n = 0;
    for (let k; (k = await w.runOnce()) > 0; ) n += k;
    await w.stop();
    expect(n).toBe(50);
    expect(w.stats.freshRetries).toBe(0);
    expect(await t.redis.xlen(t.keys(q).events)).toBe(0);
    await t.close();
  });
});
