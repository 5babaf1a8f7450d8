/**
 * The history reads' read-your-writes barrier (src/history/mirror-barrier.ts)
 * on real Redis: a queue no writer holds yet — a brand-new one, whose job may
 * finish before any writer took it over — is waited for while some writer
 * runs (the key each writer sets at its ownership rounds), and not at all
 * when none runs (no audit role: nothing would ever mirror it).
 */
import { waitForMirror } from '../../../src/history/mirror-barrier';
import { normalizeEnqueue } from '../../../src/core/job-options';
import { mirrorWritersKey } from '../../../src/redis/keys';
import { openStore, TestStore } from '../../support/redis';

let t: TestStore;
beforeAll(async () => {
  t = await openStore('read-barrier');
});
afterAll(async () => {
  await t.close();
});

const enqueue = (queue: string) => t.store.enqueue([normalizeEnqueue({ type: 'x', queue }, 1e6)]);
/** What a writer does once the entries are in PostgreSQL: they leave the stream. */
const mirrorAll = (queue: string) => t.redis.xtrim(t.keys(queue).events, 'MAXLEN', 0);

test('no writer runs: a queue nobody holds is not waited for', async () => {
  await t.redis.del(mirrorWritersKey(t.prefix));
  await enqueue('rb-none');
  const t0 = Date.now();
  expect(await waitForMirror(t.stores.mirror, ['rb-none'], 1000)).toBe(true);
  expect(Date.now() - t0).toBeLessThan(100);
});

test('a writer runs: a brand-new queue nobody holds yet is waited for until its entries are mirrored', async () => {
  await t.stores.ownership.markRunning('w-barrier', 5000);
  await enqueue('rb-new');
  expect(await t.stores.ownership.holder('rb-new')).toBeNull();
  const t0 = Date.now();
  setTimeout(() => void mirrorAll('rb-new'), 150);
  expect(await waitForMirror(t.stores.mirror, ['rb-new'], 2000)).toBe(true);
  expect(Date.now() - t0).toBeGreaterThanOrEqual(140);
});

test('a writer runs but never takes the queue: the barrier gives up after maxWaitMs', async () => {
  await t.stores.ownership.markRunning('w-barrier', 5000);
  await enqueue('rb-stuck');
  const t0 = Date.now();
  expect(await waitForMirror(t.stores.mirror, ['rb-stuck'], 300)).toBe(false);
  const ms = Date.now() - t0;
  expect(ms).toBeGreaterThanOrEqual(290);
  expect(ms).toBeLessThan(1000);
});
