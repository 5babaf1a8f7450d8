import { MirrorWriter } from '../../../src/mirror/mirror-writer';
import { normalizeEnqueue } from '../../../src/core/job-options';
import { openTestDb, TestDb } from '../../support/postgres';
import { openStore, TestStore } from '../../support/redis';

let t: TestStore;
let db: TestDb;
beforeAll(async () => {
  t = await openStore('audit-smoke');
  db = await openTestDb('smoke');
});
afterAll(async () => {
  await t.close();
  await db.close();
});

test('enqueue → claim → complete is mirrored: events, execution, projection; the hash leaves Redis', async () => {
  const [r] = await t.store.enqueue([normalizeEnqueue({ type: 'x', payload: { n: 1, s: '\ud800' } }, 1e6)]);
  const c = await t.store.claim('default', 1, 5000, 'w1');
  await t.store.complete('default', 'w1', [{ id: r.id, lockToken: c.jobs[0].lockToken, result: { ok: true } }]);
  const w = new MirrorWriter(t.stores, db.dataSource, { writerId: 'aw1' });
  await (w as any).refreshOwnership();
  expect(await w.runOnce()).toBe(3);
  const ev = await db.dataSource.query(`SELECT event, from_status, to_status FROM job_timeline WHERE job_id = $1 ORDER BY stream_ms, stream_seq`, [r.id]);
  expect(ev.map((e: any) => e.event)).toEqual(['enqueued', 'claimed', 'completed']);
  const [job] = await db.dataSource.query(`SELECT * FROM jobs WHERE id = $1`, [r.id]);
  expect(job.status).toBe('completed');
  expect(job.attempts).toBe(1);
  expect(job.payload).toBe(JSON.stringify({ n: 1, s: '\ud800' }));
  expect(job.result).toBe('{"ok":true}');
  const ex = await db.dataSource.query(`SELECT * FROM job_executions WHERE job_id = $1`, [r.id]);
  expect(ex).toHaveLength(1);
  expect(ex[0].outcome).toBe('completed');
  expect(await t.redis.exists(t.keys('default').base + 'job:' + r.id)).toBe(0);
  expect(await t.redis.xlen(t.keys('default').events)).toBe(0);
  await w.stop();
});
