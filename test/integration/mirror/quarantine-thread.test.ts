/**
 * The real writer thread (dist/mirror/writer-thread.js: run `npx nest build`
 * first) reports its writer's metrics to the parent: a bad entry it
 * quarantines shows in the parent's MirrorMetrics registry, with the batches
 * it wrote, through the one-a-second messages of the thread.
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { MirrorMetrics } from '../../../src/mirror/mirror-metrics';
import { MirrorWriterThread, WriterThreadConfig } from '../../../src/mirror/writer-thread';
import { normalizeEnqueue } from '../../../src/core/job-options';
import { openTestDb, TestDb, v7At } from '../../support/postgres';
import { openStore, REDIS_URL, TestStore } from '../../support/redis';
import { waitUntil } from '../../support/redis-server';

jest.setTimeout(60_000);

const FILE = join(__dirname, '../../../dist/mirror/writer-thread.js');

let t: TestStore;
let db: TestDb;
beforeAll(async () => {
  if (!existsSync(FILE)) throw new Error(`${FILE} missing: run npx nest build`);
  t = await openStore('audit-q-thread');
  db = await openTestDb('q_thread');
});
afterAll(async () => {
  await t.close();
  await db.close();
});

test("a quarantined entry reaches the parent's registry from the writer thread", async () => {
  const q = 'qt';
  await t.store.enqueue(Array.from({ length: 3 }, () => normalizeEnqueue({ type: 'x', queue: q }, 1e6)));
  const h = ['promoted', 'delayed', 'waiting', '0', '1e19', v7At(Date.now()), '', '', '', '', ''].join('|');
  const bad = (await (t.redis as any).xadd(t.keys(q).events, '*', 'h', h)) as string;
  const config = {
    redisUrl: REDIS_URL, redisClusterNodes: null, redisPrefix: t.prefix, databaseUrl: db.url, logLevel: 'silent',
    maxRetries: 3, idempotencyTtlMs: 86_400_000, keepCompletedCount: -1, keepCompletedMs: -1, auditThreadNice: 0,
  } as WriterThreadConfig;
  const metrics = new MirrorMetrics();
  const errors: string[] = [];
  const log = { debug() {}, info() {}, warn() {}, error: (_o: object, msg: string) => void errors.push(msg) } as any;
  const th = new MirrorWriterThread(FILE, config, 'qt-w', log, metrics);
  th.start();
  try {
    await th.whenReady();
    await waitUntil('the quarantine counted in the parent', async () => /^sluice_audit_quarantined_entries_total 1$/m.test(await metrics.registry.metrics()), 20_000, 50);
  } finally {
    await th.stop();
  }
  const text = await metrics.registry.metrics();
  expect(text).toMatch(/^sluice_audit_entries_total 4$/m);
  expect(Number(/^sluice_audit_batches_total (\d+)$/m.exec(text)?.[1])).toBeGreaterThanOrEqual(1);
  expect((await db.dataSource.query(`SELECT entry_id FROM audit_quarantine`)).map((r: { entry_id: string }) => r.entry_id)).toEqual([bad]);
  expect(errors).toEqual([]);
});
