/**
 * The idle mirror writer (MirrorWriter.idle, src/redis/stores/mirror-doorbell.ts),
 * on real Redis and PostgreSQL: with every owned stream empty it blocks on one
 * XREAD over all of them instead of reading each queue every few ms, and an
 * entry arriving in any of them still reaches PostgreSQL within milliseconds;
 * a queue made while it waits is taken at once; stop() does not wait out the
 * block.
 */
import type { Redis } from 'ioredis';
import { MirrorWriter } from '../../../src/mirror/mirror-writer';
import { normalizeEnqueue } from '../../../src/core/job-options';
import type { RedisClient } from '../../../src/redis/connection';
import { RedisMirrorStream } from '../../../src/redis/stores/mirror-stream';
import { MIRROR_GROUP } from '../../../src/redis/keys';
import { openTestDb, TestDb } from '../../support/postgres';
import { openStore, sleep, TestStore } from '../../support/redis';

let t: TestStore;
let db: TestDb;
beforeAll(async () => {
  t = await openStore('audit-idle');
  db = await openTestDb('idle');
});
afterAll(async () => {
  await t.close();
  await db.close();
});

const QUEUES = Array.from({ length: 20 }, (_, i) => `idle-${i}`);

/** A writer on `t.stores` whose stream reads are counted. */
function countedWriter(id: string): { w: MirrorWriter; reads: () => number } {
  let reads = 0;
  const mirror = Object.create(t.stores.mirror) as typeof t.stores.mirror;
  mirror.readNew = (queue, consumer, count) => {
    reads++;
    return t.stores.mirror.readNew(queue, consumer, count);
  };
  return {
    w: new MirrorWriter({ ...t.stores, mirror }, db.dataSource, { writerId: id }),
    reads: () => reads,
  };
}

const enqueue = async (queue: string): Promise<string> =>
  (await t.store.enqueue([normalizeEnqueue({ type: 'x', queue }, 1e6)]))[0].id;

/** ms until the job's row is in PostgreSQL (its `enqueued` mirrored), polled every 2 ms. */
async function msUntilMirrored(id: string, t0: number, capMs = 5000): Promise<number> {
  for (;;) {
    const r = await db.dataSource.query('SELECT 1 FROM jobs WHERE id = $1', [id]);
    if (r.length) return Date.now() - t0;
    if (Date.now() - t0 > capMs) throw new Error(`job ${id} not mirrored within ${capMs} ms`);
    await sleep(2);
  }
}

test('an idle writer over 20 queues reads each about once per ownership round, and wakes within ms of a new entry', async () => {
  for (const q of QUEUES) await enqueue(q); // the queues exist before the writer looks
  const { w, reads } = countedWriter('idle-w');
  w.start();
  try {
    // Everything so far mirrored, the writer owning every queue.
    const owned = (w as any).owned as Set<string>;
    for (let i = 0; i < 200 && owned.size < QUEUES.length; i++) await sleep(25);
    expect(owned.size).toBe(QUEUES.length);
    await sleep(300);

    // Idle for 2 s: reading every queue every 20 ms (the pace) would be ~2,000 reads.
    const r0 = reads();
    await sleep(2000);
    const idleReads = reads() - r0;
    expect(idleReads).toBeLessThanOrEqual(QUEUES.length * 4);

    // Woken by the entry, not by the wait's end (≤ 1 s, the ownership round): five in a row
    // would each land anywhere in that second if the writer only read again when it ended.
    const wakes: number[] = [];
    for (let i = 0; i < 5; i++) {
      await sleep(150 + 50 * i);
      const t0 = Date.now();
      const id = await enqueue(QUEUES[(i * 7) % QUEUES.length]);
      wakes.push(await msUntilMirrored(id, t0));
    }
    expect(Math.max(...wakes)).toBeLessThan(400);
  } finally {
    const s0 = Date.now();
    await w.stop();
    // Stopping does not wait out a blocked read.
    expect(Date.now() - s0).toBeLessThan(900);
  }
});

test('a queue made while the writer waits is taken over and mirrored at once', async () => {
  const { w } = countedWriter('idle-new');
  await enqueue('idle-first');
  w.start();
  try {
    const owned = (w as any).owned as Set<string>;
    for (let i = 0; i < 200 && !owned.has('idle-first'); i++) await sleep(25);
    // The registration is announced (QueueStore.register): the wait ends, the
    // ownership round takes the queue, its first entry follows. Three in a row:
    // had the wait run to its end (≤ 1 s), each would land anywhere in that second.
    const took: number[] = [];
    for (let i = 0; i < 3; i++) {
      await sleep(300 + 70 * i);
      const t0 = Date.now();
      took.push(await msUntilMirrored(await enqueue(`idle-brand-new-${i}`), t0));
    }
    expect(Math.max(...took)).toBeLessThan(400);
  } finally {
    await w.stop();
  }
});

test('a stop that lands while the writer reads (no wait to end yet) does not wait out the next one', async () => {
  await enqueue('idle-stop');
  const { w } = countedWriter('idle-stop');
  // stop() is called from inside a read that finds nothing: the loop then goes on to its idle wait.
  let stopping: Promise<void> | null = null;
  let stopAt = 0;
  const read = (w as any).read.bind(w) as () => Promise<unknown[]>;
  let armed = false;
  (w as any).read = async () => {
    const r = await read();
    if (armed && !stopping && r.length === 0) {
      stopAt = Date.now();
      stopping = w.stop();
    }
    return r;
  };
  w.start();
  const owned = (w as any).owned as Set<string>;
  for (let i = 0; i < 200 && !owned.has('idle-stop'); i++) await sleep(25);
  await sleep(200);
  armed = true;
  for (let i = 0; i < 200 && !stopping; i++) await sleep(10);
  expect(stopping).not.toBeNull();
  await stopping;
  expect(Date.now() - stopAt).toBeLessThan(500);
});

test('the wait only rings: a 200-job enqueue wakes it with one entry, the writer reads them all', async () => {
  const q = 'idle-ring';
  await enqueue(q);
  const replies: unknown[] = [];
  const conns: RedisClient[] = [];
  const stream = new RedisMirrorStream(t.stores.ctx, () => {
    const c = t.redis.duplicate() as RedisClient;
    const xread = c.xread.bind(c) as (...a: unknown[]) => Promise<unknown>;
    (c as any).xread = async (...a: unknown[]) => {
      const r = await xread(...a);
      replies.push(r);
      return r;
    };
    conns.push(c);
    return c;
  });
  try {
    await stream.ensureGroup(q);
    expect(await stream.readNew(q, 'ring', 1000)).toHaveLength(1);
    expect(await stream.readNew(q, 'ring', 1000)).toEqual([]); // nothing new: the tail is known
    const woken = stream.waitNew([q], 2000, new AbortController().signal);
    await sleep(50);
    await t.store.enqueue(
      Array.from({ length: 200 }, () => normalizeEnqueue({ type: 'x', queue: q }, 1e6)),
    );
    expect(await woken).toBe(true);
    const [[, entries]] = replies[0] as [string, unknown[]][];
    expect(entries).toHaveLength(1);
    expect(await stream.readNew(q, 'ring', 1000)).toHaveLength(200);
  } finally {
    stream.closeWait();
    await t.redis.xgroup('DESTROY', t.keys(q).events, MIRROR_GROUP);
    for (const c of conns) c.disconnect();
  }
});

test('waits ended early one after another (new queues while idle) share one blocking connection', async () => {
  const q = 'idle-unblock';
  await enqueue(q);
  const conns: RedisClient[] = [];
  // As production's (createRedis blocking): named, no auto-pipelining.
  const stream = new RedisMirrorStream(t.stores.ctx, (name) => {
    const c = (t.redis as Redis).duplicate({ connectionName: name, enableAutoPipelining: false }) as RedisClient;
    conns.push(c);
    return c;
  });
  try {
    await stream.ensureGroup(q);
    expect(await stream.readNew(q, 'unblock', 1000)).toHaveLength(1);
    expect(await stream.readNew(q, 'unblock', 1000)).toEqual([]);
    // Ten waits cut short 30 ms in, as ten queues made within a third of a second would.
    for (let i = 0; i < 10; i++) {
      const ac = new AbortController();
      const waited = stream.waitNew([q], 1000, ac.signal);
      await sleep(30);
      const t0 = Date.now();
      ac.abort();
      expect(await waited).toBe(false);
      expect(Date.now() - t0).toBeLessThan(150);
    }
    expect(conns.length).toBe(1);
    expect(conns[0].status).toBe('ready');
    // …and that connection still rings: the next entry ends the next wait at once.
    const woken = stream.waitNew([q], 2000, new AbortController().signal);
    await sleep(50);
    const t0 = Date.now();
    await enqueue(q);
    expect(await woken).toBe(true);
    expect(Date.now() - t0).toBeLessThan(300);
  } finally {
    stream.closeWait();
    await t.redis.xgroup('DESTROY', t.keys(q).events, MIRROR_GROUP);
    for (const c of conns) c.disconnect();
  }
});
