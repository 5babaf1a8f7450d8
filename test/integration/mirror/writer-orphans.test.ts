/**
 * A mirror writer whose acknowledgement never lands (it went to a master a
 * Sentinel failover then demoted: the soak run found such entries pending for
 * good, and every read-your-writes history query waited 2 s for them) takes
 * the entries back after `orphanIdleMs`, writes them again (idempotent) and
 * acknowledges them: nothing stays pending, no row is doubled. Real Redis and
 * PostgreSQL; the lost acknowledgement is a store whose ack does nothing once.
 */
import { MirrorWriter } from '../../../src/mirror/mirror-writer';
import { MIRROR_GROUP } from '../../../src/redis/keys';
import { normalizeEnqueue } from '../../../src/core/job-options';
import { openTestDb, TestDb } from '../../support/postgres';
import { openStore, sleep, TestStore } from '../../support/redis';
import { waitUntil } from '../../support/redis-server';

let t: TestStore;
let db: TestDb;
beforeAll(async () => {
  t = await openStore('audit-orphans');
  db = await openTestDb('orphans');
});
afterAll(async () => {
  await t.close();
  await db.close();
});

const pending = async (q: string): Promise<number> => {
  const r = (await t.redis.xpending(t.keys(q).events, MIRROR_GROUP)) as [number, ...unknown[]];
  return Number(r[0]);
};

/** A writer on `t.stores` whose first `lost` acknowledgements do nothing (as if sent to a demoted master). */
function writer(id: string, lost: number, sweep: { orphanSweepMs?: number; orphanIdleMs?: number }): MirrorWriter {
  let dropped = 0;
  const mirror = Object.create(t.stores.mirror) as typeof t.stores.mirror;
  mirror.ack = async (queue: string, ids: string[]) => {
    if (dropped < lost) {
      dropped++;
      return 1;
    }
    return t.stores.mirror.ack(queue, ids);
  };
  return new MirrorWriter({ ...t.stores, mirror }, db.dataSource, { writerId: id, idleMs: 10, ...sweep });
}

test('entries whose acknowledgement was lost are taken back, written once and acknowledged', async () => {
  const q = 'orph';
  const w = writer('orphan-w', 1, { orphanSweepMs: 200, orphanIdleMs: 500 });
  w.start();
  try {
    const ids = (await t.store.enqueue(Array.from({ length: 5 }, (_, i) => normalizeEnqueue({ queue: q, type: 'x', payload: { i } }, 1e6)))).map((r) => r.id);
    await waitUntil('the enqueues mirrored', async () => Number((await db.dataSource.query(`SELECT count(*)::int AS n FROM jobs WHERE id = ANY($1::uuid[])`, [ids]))[0].n) === 5, 10_000);
    await sleep(100);
    expect(await pending(q)).toBeGreaterThan(0); // the lost ack left them pending
    await waitUntil('nothing pending', async () => (await pending(q)) === 0, 10_000);
    const rows = await db.dataSource.query(`SELECT job_id::text, count(*)::int AS n FROM job_timeline WHERE job_id = ANY($1::uuid[]) GROUP BY job_id`, [ids]);
    expect(rows).toHaveLength(5);
    for (const r of rows) expect(r.n).toBe(1);
  } finally {
    await w.stop();
  }
});

test('without the sweep (as before) they stay pending', async () => {
  const q = 'orph-nosweep';
  const w = writer('orphan-n', 1, { orphanSweepMs: 3_600_000, orphanIdleMs: 500 });
  w.start();
  try {
    const ids = (await t.store.enqueue([normalizeEnqueue({ queue: q, type: 'x', payload: {} }, 1e6)])).map((r) => r.id);
    await waitUntil('the enqueue mirrored', async () => Number((await db.dataSource.query(`SELECT count(*)::int AS n FROM jobs WHERE id = ANY($1::uuid[])`, [ids]))[0].n) === 1, 10_000);
    await sleep(1500);
    expect(await pending(q)).toBe(1);
  } finally {
    await w.stop();
  }
});
