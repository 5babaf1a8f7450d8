/**
 * The mirror writer's read-ahead failing while the loop itself fails first
 * (src/mirror/mirror-writer.ts), on real Redis and PostgreSQL: Redis going
 * away right after a batch was written makes both the read-ahead and the
 * next ownership round fail; the loop sleeps on its backoff while the
 * read-ahead rejects. That rejection must not go unhandled (in a server
 * process it would end the process: the ops-roles "Redis down" test saw the
 * audit process exit 1), and the writer goes on once Redis answers again.
 */
import { MirrorWriter } from '../../../src/mirror/mirror-writer';
import { normalizeEnqueue } from '../../../src/core/job-options';
import { openTestDb, TestDb } from '../../support/postgres';
import { openStore, sleep, TestStore } from '../../support/redis';

let t: TestStore;
let db: TestDb;
beforeAll(async () => {
  t = await openStore('audit-prefetch');
  db = await openTestDb('prefetch');
});
afterAll(async () => {
  await t.close();
  await db.close();
});

const enqueue = async (queue: string): Promise<string> =>
  (await t.store.enqueue([normalizeEnqueue({ type: 'x', queue }, 1e6)]))[0].id;
const mirrored = async (id: string) =>
  (await db.dataSource.query('SELECT 1 FROM jobs WHERE id = $1', [id])).length > 0;

test('a read-ahead that fails while the ownership round fails too is handled; the writer goes on after', async () => {
  const q = 'prefetch-fail';
  await enqueue(q);
  const unhandled: unknown[] = [];
  const onUnhandled = (e: unknown) => unhandled.push(e);
  process.on('unhandledRejection', onUnhandled);
  // "Redis down" for the writer: from the second read after arming, reads fail 150 ms later
  // (the read-ahead is still pending when the batch is written) and so does the queue list.
  let armed = false;
  let readsSinceArmed = 0;
  let down = false;
  let w: MirrorWriter | null = null;
  const mirror = Object.create(t.stores.mirror) as typeof t.stores.mirror;
  mirror.readNew = async (queue, consumer, count) => {
    if (armed && ++readsSinceArmed >= 2) {
      down = true;
      (w as any).ownershipCheckedAt = 0; // the round is due right after this batch
      await sleep(150);
      throw new Error('Connection is closed.');
    }
    return t.stores.mirror.readNew(queue, consumer, count);
  };
  const queues = Object.create(t.stores.queues) as typeof t.stores.queues;
  queues.list = async () => {
    if (down) throw new Error('Connection is closed.');
    return t.stores.queues.list();
  };
  w = new MirrorWriter({ ...t.stores, mirror, queues }, db.dataSource, { writerId: 'prefetch-w' });
  w.start();
  try {
    const owned = (w as any).owned as Set<string>;
    for (let i = 0; i < 200 && !owned.has(q); i++) await sleep(25);
    await sleep(200);
    armed = true;
    const first = await enqueue(q);
    for (let i = 0; i < 200 && !(await mirrored(first)); i++) await sleep(10);
    expect(await mirrored(first)).toBe(true);
    await sleep(400); // the read-ahead has failed by now, the loop in its backoff
    expect(unhandled).toEqual([]);
    // Redis "back": the writer mirrors what comes next.
    armed = false;
    down = false;
    const next = await enqueue(q);
    for (let i = 0; i < 500 && !(await mirrored(next)); i++) await sleep(10);
    expect(await mirrored(next)).toBe(true);
  } finally {
    process.off('unhandledRejection', onUnhandled);
    await w.stop();
  }
});
