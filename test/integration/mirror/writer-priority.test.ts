/**
 * The mirror writer thread of a ROLE=all process (the compiled
 * dist/mirror/writer-thread.js, as the service starts it) yields the CPU
 * while the mirror is far behind and takes it back once caught up
 * (src/mirror/writer-priority.ts): read from the thread's own nice value in
 * /proc. Linux only (elsewhere the thread's priority is left alone).
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { MirrorWriterThread, WriterThreadConfig } from '../../../src/mirror/writer-thread';
import { YIELD_LAG_MS } from '../../../src/mirror/writer-priority';
import { normalizeEnqueue } from '../../../src/core/job-options';
import { outbox } from '../../support/mirror';
import { waitUntil } from '../../support/cases';
import { openTestDb, TestDb } from '../../support/postgres';
import { openStore, REDIS_URL, sleep, TestStore } from '../../support/redis';

const NICE = 7;
const linux = process.platform === 'linux' ? describe : describe.skip;

/** The nice values of this process's threads. */
function threadNices(): number[] {
  return readdirSync('/proc/self/task').map((t) => {
    const stat = readFileSync(`/proc/self/task/${t}/stat`, 'utf8');
    return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[16]);
  });
}

linux('the writer thread yields while far behind', () => {
  let t: TestStore;
  let db: TestDb;
  let th: MirrorWriterThread | undefined;
  beforeAll(async () => {
    t = await openStore('prio');
    db = await openTestDb('prio');
  });
  afterAll(async () => {
    await th?.stop();
    await t.close();
    await db.close();
  });

  test(`nice ${NICE} after a batch more than ${YIELD_LAG_MS} ms old, normal again after a fresh one`, async () => {
    const q = 'prio-q';
    const enqueue = (n: number) => t.store.enqueue(Array.from({ length: n }, () => normalizeEnqueue({ type: 'x', queue: q }, 1e6)));
    const drained = () => waitUntil('the stream mirrored', async () => ((await outbox(t.redis, t, [q])).len === 0 ? true : undefined), 15_000, 20);
    await enqueue(50);
    await sleep(YIELD_LAG_MS + 300);
    expect(threadNices()).not.toContain(NICE);
    const config = {
      redisUrl: REDIS_URL, redisClusterNodes: null, redisPrefix: t.prefix, databaseUrl: db.url, logLevel: 'warn', maxRetries: 3,
      idempotencyTtlMs: 86_400_000, keepCompletedCount: -1, keepCompletedMs: -1, auditThreadNice: NICE,
    } as WriterThreadConfig;
    th = new MirrorWriterThread(join(__dirname, '../../../dist/mirror/writer-thread.js'), config, 'w-prio', { debug() {}, info() {}, warn() {}, error() {} } as any);
    th.start();
    await th.whenReady();
    await drained();
    expect(threadNices()).toContain(NICE);
    // A batch of entries just written: the mirror is caught up, the thread back at normal priority.
    await enqueue(1);
    await drained();
    await waitUntil('the thread back at nice 0', async () => (threadNices().includes(NICE) ? undefined : true), 5_000, 20);
    const [{ n }] = await db.dataSource.query(`SELECT count(*)::int AS n FROM jobs WHERE queue = $1`, [q]);
    expect(n).toBe(51);
  });
});
