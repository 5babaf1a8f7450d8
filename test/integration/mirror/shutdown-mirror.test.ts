import { normalizeEnqueue } from '../../../src/core/job-options';
import { killAll, SluiceProcess, startSluice } from '../../support/process';
import { openTestDb, TestDb } from '../../support/postgres';
import { openStore, sleep, TestStore } from '../../support/redis';

let t: TestStore;
let db: TestDb;
let proc: SluiceProcess | undefined;
beforeAll(async () => {
  t = await openStore('shutdown-mirror');
  db = await openTestDb('shutdown');
});
afterAll(async () => {
  await killAll([proc]);
  await t.close();
  await db.close();
});

test.each([
  ['in its worker thread (the default)', 'true'],
  ['on the main thread (AUDIT_THREAD=false)', 'false'],
])('SIGTERM of a process with every role, the audit writer %s: the jobs its workers release are mirrored before it exits', async (_, auditThread) => {
  for (let round = 0; round < 3; round++) {
    proc = await startSluice({
      ROLE: 'all',
      PORT: '0',
      REDIS_PREFIX: t.prefix,
      DATABASE_URL: db.url,
      SHUTDOWN_GRACE_MS: '300',
      AUDIT_THREAD: auditThread,
    });
    // Which thread mirrors: the main thread's log line says, and only the thread logs its own start.
    await proc.waitFor(/"msg":"audit writer started"/);
    const started = JSON.parse(proc.output().split('\n').find((l) => l.includes('"msg":"audit writer started"'))!);
    expect(started.thread).toBe(auditThread === 'true');
    if (auditThread === 'true') await proc.waitFor(/"msg":"audit writer thread started"/);
    const [r] = await t.store.enqueue([normalizeEnqueue({ type: 'diag.sleep', queue: `sm${auditThread[0]}${round}`, payload: { ms: 60_000 } }, 1e6)]);
    for (let i = 0; i < 200; i++) {
      const j = await t.store.getJob(`sm${auditThread[0]}${round}`, r.id);
      if (j?.status === 'active') break;
      await sleep(25);
    }
    proc.kill('SIGTERM');
    expect((await proc.exited).code).toBe(0);
    if (process.env.DEBUG_SHUTDOWN) console.log(proc.output().split('\n').filter((l) => /drain|releas|stopp|audit|shutting/.test(l)).join('\n'));
    const [row] = await db.dataSource.query(`SELECT status, attempts FROM jobs WHERE id = $1`, [r.id]);
    const ev = await db.dataSource.query(`SELECT event FROM job_timeline WHERE job_id = $1 ORDER BY stream_ms, stream_seq`, [r.id]);
    expect({ round, row, events: ev.map((e: { event: string }) => e.event) }).toEqual({
      round,
      row: { status: 'waiting', attempts: 0 },
      events: ['enqueued', 'claimed', 'released'],
    });
    expect(await t.redis.xlen(t.keys(`sm${auditThread[0]}${round}`).events)).toBe(0);
    await t.store.cancel(`sm${auditThread[0]}${round}`, r.id);
    expect(proc.output()).not.toMatch(/audit writer thread (failed|exited)/);
  }
});
