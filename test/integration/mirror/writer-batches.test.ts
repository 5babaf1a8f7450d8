/**
 * The mirror writer's read-ahead and batch cutting, on real Redis and
 * PostgreSQL: entries read ahead are never dropped when the backlog is
 * served first (takeover of a dead writer's queues), and a batch of large
 * payloads is cut into several transactions instead of one script too long
 * to build.
 */
import { MirrorWriter } from '../../../src/mirror/mirror-writer';
import { MIRROR_GROUP } from '../../../src/redis/keys';
import { normalizeEnqueue } from '../../../src/core/job-options';
import { openTestDb, TestDb } from '../../support/postgres';
import { openStore, sleep, TestStore } from '../../support/redis';

let t: TestStore;
let db: TestDb;
beforeAll(async () => {
  t = await openStore('audit-batches');
  db = await openTestDb('batches');
});
afterAll(async () => {
  await t.close();
  await db.close();
});

test('a read-ahead pending while taken-over entries are written first is kept: every event mirrored, none left pending', async () => {
  const A = 'ra-a';
  // Five queues of a dead writer, their leases running out one after another
  // while W mirrors A: each takeover fills W's backlog while a read-ahead of A is pending.
  for (let i = 1; i <= 5; i++) {
    const q = `ra-b${i}`;
    await t.store.enqueue([normalizeEnqueue({ type: 'x', queue: q }, 1e6)]);
    const k = t.keys(q);
    await t.redis.set(k.mirrorLock, 'dead', 'PX', 350 * i);
    await t.redis.xgroup('CREATE', k.events, MIRROR_GROUP, '0', 'MKSTREAM');
    await (t.redis as any).xreadgroup('GROUP', MIRROR_GROUP, 'dead', 'COUNT', 100, 'STREAMS', k.events, '>');
  }
  await t.store.enqueue([normalizeEnqueue({ type: 'x', queue: A }, 1e6)]);
  // PostgreSQL slow (150 ms per batch), so a read-ahead is pending during each write.
  const ds = db.dataSource;
  const query = ds.query.bind(ds);
  (ds as any).query = async (q: string, p?: unknown[]) => {
    if (q.startsWith('SET LOCAL')) await sleep(150);
    return query(q, p);
  };
  const w = new MirrorWriter(t.stores, ds, { writerId: 'ra-w', lockTtlMs: 300, idleMs: 5 });
  try {
    w.start();
    const ids: string[] = [];
    const until = Date.now() + 2000;
    while (Date.now() < until) {
      ids.push((await t.store.enqueue([normalizeEnqueue({ type: 'x', queue: A }, 1e6)]))[0].id);
      await sleep(10);
    }
    for (let i = 0; i < 100 && (await t.redis.xlen(t.keys(A).events)) > 0; i++) await sleep(50);
    const [pending] = (await t.redis.xpending(t.keys(A).events, MIRROR_GROUP)) as [number];
    expect(pending).toBe(0);
    const [{ n }] = await query(`SELECT count(*)::int AS n FROM jobs WHERE id = ANY($1::uuid[])`, [ids]);
    expect(n).toBe(ids.length);
    for (let i = 1; i <= 5; i++) expect(await t.redis.xlen(t.keys(`ra-b${i}`).events)).toBe(0);
  } finally {
    await w.stop();
    (ds as any).query = query;
  }
});

test('a batch over maxBatchChars is cut into several transactions, in order, nothing dropped', async () => {
  const q = 'cut';
  const payload = { blob: 'x'.repeat(4000) };
  const ids = (await t.store.enqueue(Array.from({ length: 30 }, () => normalizeEnqueue({ type: 'x', queue: q, payload }, 1e6)))).map((r) => r.id);
  const w = new MirrorWriter(t.stores, db.dataSource, { writerId: 'cut-w', maxBatchChars: 20_000 });
  await (w as any).refreshOwnership();
  const sizes: number[] = [];
  for (let n; (n = await w.runOnce()) > 0; ) sizes.push(n);
  await w.stop();
  // ~4,100 chars of fields per entry: a fifth would pass 20,000, so batches of four.
  expect(sizes).toEqual([4, 4, 4, 4, 4, 4, 4, 2]);
  const rows = await db.dataSource.query(`SELECT id::text AS id, payload FROM jobs WHERE queue = $1 ORDER BY id`, [q]);
  expect(rows.map((r: { id: string }) => r.id)).toEqual([...ids].sort());
  for (const r of rows) expect(r.payload).toBe(JSON.stringify(payload));
  expect(await t.redis.xlen(t.keys(q).events)).toBe(0);
});

test('under a steady trickle, short reads are paced: batches hold what the pace gathered; a backlog drains without waiting', async () => {
  /** Enqueues one job every 2 ms for `ms`, with the writer running; @returns the batches written and the jobs enqueued. */
  const trickle = async (q: string, paceMs: number, ms: number) => {
    const w = new MirrorWriter(t.stores, db.dataSource, { writerId: `pace-${paceMs}`, batchPaceMs: paceMs, idleMs: 1 });
    await t.store.enqueue([normalizeEnqueue({ type: 'x', queue: q }, 1e6)]); // the queue exists before the writer looks
    w.start();
    try {
      await sleep(300); // taken over
      const b0 = w.stats.batches;
      const until = Date.now() + ms;
      let n = 0;
      while (Date.now() < until) {
        await t.store.enqueue([normalizeEnqueue({ type: 'x', queue: q }, 1e6)]);
        n++;
        await sleep(2);
      }
      for (let i = 0; i < 100 && (await t.redis.xlen(t.keys(q).events)) > 0; i++) await sleep(20);
      expect(await t.redis.xlen(t.keys(q).events)).toBe(0);
      return { batches: w.stats.batches - b0, jobs: n };
    } finally {
      await w.stop();
    }
  };
  const paced = await trickle('pace-on', 100, 1000);
  const eager = await trickle('pace-off', 0, 1000);
  // 1 s at one job per ~2–3 ms: paced every 100 ms, about ten batches (slack for a slow machine); unpaced, a batch every few jobs.
  expect(paced.batches).toBeLessThanOrEqual(14);
  expect(eager.batches).toBeGreaterThan(paced.batches * 3);
  const [{ n }] = await db.dataSource.query(`SELECT count(*)::int AS n FROM jobs WHERE queue = 'pace-on'`);
  expect(n).toBe(paced.jobs + 1);

  // A backlog: 3,000 entries waiting; paced at 1 s, a full read is followed at once.
  const q = 'pace-backlog';
  await t.store.enqueue(Array.from({ length: 3000 }, () => normalizeEnqueue({ type: 'x', queue: q }, 1e6)));
  const w = new MirrorWriter(t.stores, db.dataSource, { writerId: 'pace-backlog', batchPaceMs: 1000 });
  await (w as any).refreshOwnership();
  const t0 = Date.now();
  const sizes: number[] = [];
  for (let k; (k = await w.runOnce()) > 0; ) sizes.push(k);
  await w.stop();
  // The writer owns every queue of this file: a read takes up to 1000 / queues entries of each, and a read that filled its share is full.
  expect(sizes.reduce((a, b) => a + b, 0)).toBe(3000);
  expect(sizes.length).toBeGreaterThanOrEqual(3);
  // Paced at 1 s each, these reads would take several seconds; only the last (short) read and the empty one after it waited.
  expect(Date.now() - t0).toBeLessThan(2000 + 1500);
});
