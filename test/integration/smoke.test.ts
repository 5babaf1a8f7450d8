import { normalizeEnqueue } from '../../src/core/job-options';
import { openStore, readEvents, TestStore } from '../support/redis';

let t: TestStore;
beforeAll(async () => { t = await openStore('smoke'); });
afterAll(async () => t.close());

test('enqueue, claim, complete round trip', async () => {
  const [r] = await t.store.enqueue([normalizeEnqueue({ type: 'x', payload: { a: 'é'.repeat(100) } }, 1e6)]);
  expect(r.status).toBe('waiting');
  const c = await t.store.claim('default', 10, 5000, 'w1');
  expect(c.jobs).toHaveLength(1);
  expect(c.jobs[0].payload).toEqual({ a: 'é'.repeat(100) });
  const done = await t.store.complete('default', 'w1', [{ id: r.id, lockToken: c.jobs[0].lockToken, result: { ok: 1 } }]);
  expect(done).toEqual(['completed']);
  const j = await t.store.getJob('default', r.id);
  expect(j?.status).toBe('completed');
  expect(j?.payload).toEqual({ a: 'é'.repeat(100) });
  const ev = await readEvents(t.redis, t.keys('default').events);
  expect(ev.map((e) => e.e)).toEqual(['enqueued', 'claimed', 'completed']);
});
