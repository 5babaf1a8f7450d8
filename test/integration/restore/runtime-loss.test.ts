/**
 * CASES C27, API.md v1.2 "Redis loss at run time": Redis comes back empty, or
 * from an older snapshot, while Sluice runs. An api+scheduler+audit process and a
 * worker process on a private redis-server (no persistence) and its own database:
 *
 * 1. Empty: a cron schedule every 2 s, long jobs (some running), delayed jobs,
 *    3 in the DLQ and finished ones, all mirrored; Redis is SIGKILLed and
 *    started empty. Without a restart the process notices within 15 s, logs
 *    it once at warn and rebuilds from PostgreSQL: the running jobs run again
 *    (a `stalled` event, reason `restored`), the waiting ones too, the
 *    delayed ones not before their runAt, the DLQ is listed, the schedule
 *    fires again, finished jobs never run again; `/metrics` counts it.
 * 2. Rewound: Redis is SIGKILLed and restarted from an older SAVE while the
 *    process with the watch is frozen (the workers come back first: the
 *    restore fence keeps them off the snapshot's jobs). Jobs PostgreSQL
 *    knows as finished never run again (their history rows untouched),
 *    jobs newer than the snapshot come back and complete, ids never collide.
 * 3. `/readyz` answers 503 `{"status":"restoring"}` while a rebuild runs.
 */
import { randomBytes } from 'node:crypto';
import { openTestDb, TestDb } from '../../support/postgres';
import { killAll, SluiceProcess, startSluice } from '../../support/process';
import { RedisServer, removeDir, sleepMs, startRedisServer, stopAllRedisServers, waitUntil } from '../../support/redis-server';

jest.setTimeout(180_000);

const Q = 'c27';
const prefix = `t-c27-${randomBytes(3).toString('hex')}`;
let server: RedisServer;
let db: TestDb;
/** api, scheduler and audit (the restore watch runs here). */
let proc: SluiceProcess;
/** The in-process workers, in a process of their own. */
let workers: SluiceProcess;

const sql = <T = any>(text: string, params: unknown[] = []): Promise<T[]> => db.dataSource.query(text, params);

async function api(method: string, path: string, body?: unknown): Promise<{ status: number; body: any }> {
  const res = await fetch(proc.url() + path, {
    method,
    headers: body === undefined ? {} : { 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : null };
}

async function enqueue(input: Record<string, unknown>): Promise<string> {
  const r = await api('POST', '/jobs', { queue: Q, ...input });
  expect(r.status).toBe(201);
  return r.body.id;
}

async function statusOf(ids: string[]): Promise<Map<string, string>> {
  const rows = await sql<{ id: string; status: string }>(`SELECT id::text, status FROM jobs WHERE id = ANY($1::uuid[])`, [ids]);
  return new Map(rows.map((r) => [r.id, r.status]));
}

/** Executions (claims) per job, from the mirrored history. */
async function runsOf(ids: string[]): Promise<Map<string, number>> {
  const rows = await sql<{ id: string; n: number }>(
    `SELECT job_id::text AS id, count(*)::int AS n FROM job_timeline WHERE job_id = ANY($1::uuid[]) AND event = 'claimed' GROUP BY job_id`,
    [ids],
  );
  return new Map(rows.map((r) => [r.id, r.n]));
}

async function restartRedis(): Promise<void> {
  await server.kill();
  await server.start();
}

const warnLines = () => proc.output().split('\n').filter((l) => l.includes('redis lost state while running'));

beforeAll(async () => {
  server = await startRedisServer({ name: 'c27' });
  db = await openTestDb('c27');
  const env = {
    REDIS_URL: server.url,
    REDIS_PREFIX: prefix,
    DATABASE_URL: db.url,
    QUEUES: Q,
    WORKER_CONCURRENCY: '4',
    LOCK_TTL_MS: '4000',
    HEARTBEAT_INTERVAL_MS: '500',
    REAPER_INTERVAL_MS: '500',
    REDIS_CHECK_INTERVAL_MS: '1000',
    SHUTDOWN_GRACE_MS: '1000',
  };
  proc = await startSluice({ ...env, ROLE: 'api,scheduler,audit' });
  workers = await startSluice({ ...env, ROLE: 'worker' });
});

afterAll(async () => {
  await killAll([proc, workers]);
  await stopAllRedisServers();
  await db?.close();
  removeDir(server?.opts.dir);
});

test('C27: Redis comes back empty while Sluice runs: rebuilt from PostgreSQL, nothing lost, nothing finished runs again', async () => {
  const pids = [proc.proc.pid, workers.proc.pid];
  const sched = await api('POST', '/schedules', { name: 'c27-every-2s', cron: '*/2 * * * * *', queue: Q, type: 'diag.sleep', payload: { ms: 5 } });
  expect(sched.status).toBe(201);

  const quick = await Promise.all(Array.from({ length: 8 }, (_, i) => enqueue({ type: 'diag.sleep', payload: { ms: 5, i } })));
  await waitUntil('quick jobs completed and mirrored', async () => [...(await statusOf(quick)).values()].filter((s) => s === 'completed').length === 8, 30_000);
  const dead = await Promise.all([0, 1, 2].map(() => enqueue({ type: 'diag.fail', maxAttempts: 1 })));
  const long: string[] = [];
  for (let i = 0; i < 20; i++) long.push(await enqueue({ type: 'diag.sleep', payload: { ms: 1500, i } }));
  const runAt = Date.now() + 12_000;
  const delayed = await Promise.all(Array.from({ length: 5 }, () => enqueue({ type: 'diag.sleep', payload: { ms: 5 }, runAt: new Date(runAt).toISOString() })));

  await waitUntil(
    'DLQ, active, waiting and delayed jobs all mirrored',
    async () => {
      const s = [...(await statusOf([...dead, ...long, ...delayed])).values()];
      const n = (x: string) => s.filter((v) => v === x).length;
      return n('failed') === 3 && n('active') >= 2 && n('waiting') >= 4 && n('delayed') === 5;
    },
    30_000,
    20,
  );
  const mine = () => [...quick, ...dead, ...long, ...delayed];
  /** Jobs the schedule made (every job of the queue but the test's own) created after `ms` (completed ones only with `done`). */
  const scheduled = async (ms: number, done = true) =>
    (await sql(`SELECT count(*)::int AS n FROM jobs WHERE queue = $1 AND NOT (id = ANY($2::uuid[])) AND created_at > to_timestamp($3 / 1000.0) AND ($4 = false OR status = 'completed')`, [Q, mine(), ms, done]))[0].n;
  await waitUntil('the schedule fired before the loss', async () => (await scheduled(0, false)) > 0, 10_000, 100);
  const finishedBefore = [...(await statusOf(long))].filter(([, s]) => s === 'completed').map(([id]) => id);
  const activeBefore = [...(await statusOf(long))].filter(([, s]) => s === 'active').map(([id]) => id);

  // ---- Redis dies and comes back with nothing.
  const killedAt = Date.now();
  await restartRedis();
  await waitUntil('the rebuild is logged', () => warnLines().length === 1, 15_000, 50);
  expect(Date.now() - killedAt).toBeLessThan(15_000);
  const line = JSON.parse(warnLines()[0]);
  expect(line.level).toBe(40); // warn
  expect(line.lost).toEqual([Q]);
  expect(line.failed).toBe(3);
  expect(line.delayed).toBe(5);
  expect([proc.proc.pid, workers.proc.pid]).toEqual(pids);
  expect([proc.proc.exitCode, workers.proc.exitCode]).toEqual([null, null]);

  // Every accepted job completes (the DLQ ones stay dead-lettered and listed).
  await waitUntil(
    'every long and delayed job completed',
    async () => [...(await statusOf([...long, ...delayed])).values()].every((s) => s === 'completed'),
    60_000,
    100,
  );
  const dlq = await api('GET', `/jobs/dlq/all?queue=${Q}`);
  expect(dlq.status).toBe(200);
  expect(dlq.body.items.map((j: any) => j.id).sort()).toEqual([...dead].sort());

  const runs = await runsOf([...quick, ...long, ...delayed]);
  // Finished before the loss: never ran again.
  for (const id of [...quick, ...finishedBefore]) expect(runs.get(id)).toBe(1);
  // Running at the loss: ran again after a `stalled` event (reason restored).
  const stalled = await sql<{ id: string; reason: string }>(`SELECT job_id::text AS id, reason FROM job_timeline WHERE job_id = ANY($1::uuid[]) AND event = 'stalled'`, [activeBefore]);
  for (const id of activeBefore) {
    if (finishedBefore.includes(id)) continue;
    expect(stalled.filter((s) => s.id === id).map((s) => s.reason)).toContain('restored');
  }
  // Each job completed exactly once.
  const completions = await sql<{ id: string; n: number }>(
    `SELECT job_id::text AS id, count(*)::int AS n FROM job_timeline WHERE job_id = ANY($1::uuid[]) AND event = 'completed' GROUP BY job_id`,
    [[...quick, ...long, ...delayed]],
  );
  expect(completions.length).toBe(quick.length + long.length + delayed.length);
  for (const c of completions) expect(c.n).toBe(1);
  // Delayed jobs not before their runAt.
  const starts = await sql<{ ms: number }>(`SELECT extract(epoch FROM started_at) * 1000 AS ms FROM job_executions WHERE job_id = ANY($1::uuid[])`, [delayed]);
  expect(starts.length).toBe(5);
  for (const s of starts) expect(Number(s.ms)).toBeGreaterThanOrEqual(runAt - 5);

  // The schedule fires again after the rebuild.
  await waitUntil(
    'the schedule fired after the loss',
    async () => (await scheduled(killedAt)) >= 2,
    20_000,
    200,
  );

  const text = await (await fetch(proc.url() + '/metrics')).text();
  expect(text).toMatch(/^sluice_redis_restores_total 1$/m);
  const restoredJobs = Number(/^sluice_redis_restored_jobs_total (\d+)$/m.exec(text)?.[1]);
  expect(restoredJobs).toBe(line.jobs);
  expect(restoredJobs).toBeGreaterThanOrEqual(3 + 5 + activeBefore.length);
});

test('C27 variant: Redis restarts from an older snapshot: finished jobs never come back, newer jobs do, history untouched', async () => {
  // Quiet the schedule: only this test's jobs run.
  const list = await api('GET', '/schedules');
  for (const s of list.body.items ?? list.body) await api('DELETE', `/schedules/${s.id}`);
  await sleepMs(2500);

  const inSnapshot: string[] = [];
  for (let i = 0; i < 12; i++) inSnapshot.push(await enqueue({ type: 'diag.sleep', payload: { ms: 400, i }, priority: 0 }));
  await waitUntil('the first jobs are mirrored', async () => (await statusOf(inSnapshot)).size === 12, 15_000, 20);
  const admin = server.client();
  expect(await admin.save()).toBe('OK');
  admin.disconnect();
  const after = await Promise.all(Array.from({ length: 6 }, (_, i) => enqueue({ type: 'diag.sleep', payload: { ms: 5, after: i } })));
  // Let some of the snapshot's jobs finish (PostgreSQL knows them as completed) but not all.
  await waitUntil(
    'some snapshot jobs completed and mirrored',
    async () => [...(await statusOf(inSnapshot)).values()].filter((s) => s === 'completed').length >= 4,
    30_000,
    20,
  );
  const finished = [...(await statusOf(inSnapshot))].filter(([, s]) => s === 'completed').map(([id]) => id);
  const finishedRows = await sql(`SELECT id::text, status, finished_at, attempts FROM jobs WHERE id = ANY($1::uuid[]) ORDER BY id`, [finished]);
  const linesBefore = warnLines().length;

  // ---- Redis dies and comes back from the older snapshot. The process with
  // the restore watch is frozen meanwhile: the workers are back first and
  // find the snapshot's jobs — PostgreSQL knows some as completed.
  proc.kill('SIGSTOP');
  try {
    await restartRedis();
    await sleepMs(3000);
  } finally {
    proc.kill('SIGCONT');
  }
  await waitUntil('the rebuild is logged', () => warnLines().length === linesBefore + 1, 15_000, 50).catch((e) => { console.log(proc.output().split('\n').filter((l) => /restore|audit/.test(l)).map((l) => l.slice(0, 400)).join('\n')); throw e; });
  const line = JSON.parse(warnLines()[linesBefore]);
  expect(line.rewound).toEqual([Q]);

  await waitUntil(
    'every job completed',
    async () => [...(await statusOf([...inSnapshot, ...after])).values()].every((s) => s === 'completed'),
    60_000,
    100,
  );
  const runs = await runsOf([...inSnapshot, ...after]);
  for (const id of finished) expect(runs.get(id)).toBe(1);
  for (const id of after) expect(runs.get(id)).toBeGreaterThanOrEqual(1);
  // History of the finished jobs untouched (the mirror wrote no rewound state over it).
  expect(await sql(`SELECT id::text, status, finished_at, attempts FROM jobs WHERE id = ANY($1::uuid[]) ORDER BY id`, [finished])).toEqual(finishedRows);
  const completions = await sql<{ n: number }>(
    `SELECT count(*)::int AS n FROM job_timeline WHERE job_id = ANY($1::uuid[]) AND event = 'completed' GROUP BY job_id`,
    [[...inSnapshot, ...after]],
  );
  expect(completions.length).toBe(inSnapshot.length + after.length);
  for (const c of completions) expect(c.n).toBe(1);
  // New ids after the rebuild do not collide with any earlier one.
  const fresh = await enqueue({ type: 'diag.sleep', payload: { ms: 1 } });
  expect([...inSnapshot, ...after]).not.toContain(fresh);
});

test('/readyz answers 503 {"status":"restoring"} while a rebuild runs', async () => {
  const admin = server.client();
  // What a rebuilding watch writes (RestoreStore.setRestoring): its id and until when.
  await admin.hset(`${prefix}:restoring`, 'watch-test', String(Date.now() + 5000));
  const r = await api('GET', '/readyz');
  expect(r.status).toBe(503);
  expect(r.body.status).toBe('restoring');
  // One that ended (or died: past its time) no longer counts.
  await admin.hset(`${prefix}:restoring`, 'watch-test', String(Date.now() - 1));
  admin.disconnect();
  expect((await api('GET', '/readyz')).status).toBe(200);
});
