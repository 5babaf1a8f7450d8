/**
 * PostgreSQL goes away for 20 s in the middle of a 5,000-job run and comes
 * back: the history mirror loses nothing.
 *
 * A private PostgreSQL (test/support/private-postgres.ts: the shared server
 * is never stopped) and one `ROLE=audit,worker,scheduler` process (dist)
 * with DATABASE_URL on it. The test enqueues 5,000 `diag.echo` jobs on two
 * queues over ~30 s; once the writer has mirrored 2,000 events, it stops the
 * server (`pg_ctl stop -m immediate`: every connection drops, crash recovery
 * at the next start) for 20 s while jobs keep being enqueued and run (their
 * events wait in Redis), then starts it again while jobs still come. Checks: every event the
 * scripts emitted (XINFO entries-added) is a row, exactly once, every job's
 * trail is complete and its projection completed with its result, the
 * streams drain to 0, the process never crashed, and it logged once that
 * the batch failed and later that mirroring resumed.
 */
import { Client } from 'pg';
import { normalizeEnqueue } from '../../../src/core/job-options';
import { entriesAdded, outbox } from '../../support/mirror';
import { PrivatePostgres, privatePostgres } from '../../support/private-postgres';
import { killAll, SluiceProcess, startSluice } from '../../support/process';
import { openStore, sleep, TestStore } from '../../support/redis';
import { waitUntil } from '../../support/redis-server';

jest.setTimeout(120_000);

const QUEUES = ['outage-a', 'outage-b'];
const JOBS = 5000;
const PER_TICK = 50;
const TICK_MS = 300;
const OUTAGE_MS = 20_000;

let pg: PrivatePostgres;
let t: TestStore;
let dbUrl: string;
let proc: SluiceProcess | undefined;

beforeAll(async () => {
  pg = await privatePostgres('audit-outage');
  await pg.start();
  dbUrl = pg.url('sluice_outage');
  t = await openStore('audit-outage');
});
afterAll(async () => {
  await killAll([proc]);
  await t?.close();
  await pg?.destroy();
});

/** One query on a short-lived connection (the server restarts under the test). */
async function query<T = any>(sql: string, params: unknown[] = []): Promise<T[]> {
  const c = new Client({ connectionString: dbUrl });
  c.on('error', () => undefined);
  await c.connect();
  try {
    return (await c.query(sql, params)).rows as T[];
  } finally {
    await c.end().catch(() => undefined);
  }
}

const count = async (table: string) =>
  Number((await query<{ n: string }>(`SELECT count(*) AS n FROM ${table}`))[0].n);

test('20 s without Postgres in the middle of a 5,000-job run: every event arrives after it returns, none lost', async () => {
  const t0 = Date.now();
  proc = await startSluice({
    ROLE: 'audit,worker,scheduler',
    REDIS_PREFIX: t.prefix,
    DATABASE_URL: dbUrl,
    WORKER_CONCURRENCY: '20',
  });
  await proc.waitFor(/"msg":"audit writer started"/);
  await proc.waitFor(/"msg":"worker started"/);

  const ids: string[] = [];
  let enqueued = false;
  const producer = (async () => {
    for (let n = 0; n < JOBS; n += PER_TICK) {
      const batch = Array.from({ length: PER_TICK }, (_, i) =>
        normalizeEnqueue(
          { queue: QUEUES[(n / PER_TICK) % 2], type: 'diag.echo', payload: { n: n + i } },
          1_000_000,
        ),
      );
      ids.push(...(await t.store.enqueue(batch)).map((r) => r.id));
      await sleep(TICK_MS);
    }
    enqueued = true;
  })();
  producer.catch(() => undefined);

  // In the middle: the writer is mirroring, jobs keep coming.
  await waitUntil(
    'the writer mirroring 2,000 events',
    async () => (await count('job_timeline')) >= 2000,
    30_000,
    50,
  );
  const beforeOutage = await count('job_timeline');
  await pg.stop('immediate');
  const stoppedAt = Date.now();
  expect(await pg.running()).toBe(false);
  await proc.waitFor(/"msg":"audit batch failed: events stay in Redis, retrying"/, 10_000);
  await sleep(OUTAGE_MS - (Date.now() - stoppedAt));
  // Events piled up in Redis meanwhile; the worker went on running jobs.
  const backlog = await outbox(t.redis, t, QUEUES);
  expect(backlog.len).toBeGreaterThan(1000);
  expect(proc.proc.exitCode).toBeNull();
  const enqueuedAtRestart = ids.length;
  await pg.start();
  const restartedAt = Date.now();
  await proc.waitFor(/"msg":"audit writer: postgres is back, mirroring resumed"/, 15_000);
  const resumedAfterMs = Date.now() - restartedAt;

  await producer;
  expect(enqueued).toBe(true);
  // The run went on after Postgres came back, too.
  expect(enqueuedAtRestart).toBeLessThan(JOBS);
  expect(ids).toHaveLength(JOBS);
  let added = 0;
  await waitUntil(
    'every job completed and every stream drained',
    async () => {
      const o = await outbox(t.redis, t, QUEUES);
      if (o.len !== 0 || o.pending !== 0) return false;
      added = 0;
      for (const q of QUEUES) added += await entriesAdded(t.redis, t.keys(q).events);
      return (
        (await count('job_timeline')) + (await count('job_logs')) === added &&
        (await count(`jobs WHERE status = 'completed'`)) === JOBS
      );
    },
    60_000,
    200,
  );

  // None lost, none twice: one row per entry the scripts emitted, per job a full trail.
  const [{ n, d }] = await query(
    `SELECT count(*)::int AS n, count(DISTINCT (queue, stream_ms, stream_seq))::int AS d FROM job_timeline`,
  );
  expect([n, d]).toEqual([added, added]);
  const trails = await query<{ id: string; evs: string[] }>(
    `SELECT job_id::text AS id, array_agg(event ORDER BY stream_ms, stream_seq) AS evs FROM job_timeline GROUP BY job_id`,
  );
  expect(trails).toHaveLength(JOBS);
  const problems: string[] = [];
  let reruns = 0;
  for (const { id, evs } of trails) {
    const c = (e: string) => evs.filter((x) => x === e).length;
    if (c('claimed') > 1) reruns++;
    if (
      evs[0] !== 'enqueued' ||
      c('enqueued') !== 1 ||
      c('completed') !== 1 ||
      evs[evs.length - 1] !== 'completed' ||
      c('claimed') !== c('stalled') + 1
    ) {
      problems.push(`${id}: ${evs.join(',')}`);
    }
  }
  expect(problems.slice(0, 10)).toEqual([]);
  expect(new Set(trails.map((r) => r.id))).toEqual(new Set(ids));
  // Projection and executions: each job completed, its result is its payload (diag.echo), one completed execution.
  const bad = await query(
    `SELECT id FROM jobs WHERE status <> 'completed' OR result IS DISTINCT FROM payload OR finished_at IS NULL
     OR NOT EXISTS (SELECT 1 FROM job_executions e WHERE e.job_id = jobs.id AND e.outcome = 'completed' AND e.execution_seq = jobs.execution_seq)`,
  );
  expect(bad).toEqual([]);
  expect(await count(`job_executions WHERE outcome = 'running'`)).toBe(0);

  // The process never crashed; it said the batch failed (once) and later that mirroring resumed.
  expect(proc.proc.exitCode).toBeNull();
  expect(proc.proc.signalCode).toBeNull();
  const out = proc.output();
  expect(out).not.toMatch(/audit writer loop crashed|failed to start|uncaught|unhandled/i);
  const failedAt = out.indexOf('"msg":"audit batch failed: events stay in Redis, retrying"');
  const resumedAt = out.indexOf('"msg":"audit writer: postgres is back, mirroring resumed"');
  expect(failedAt).toBeGreaterThan(-1);
  expect(resumedAt).toBeGreaterThan(failedAt);
  expect(out.split('"msg":"audit batch failed').length - 1).toBe(1);
  proc.kill('SIGTERM');
  expect((await proc.exited).code).toBe(0);
  console.log(
    `mirrored before the outage: ${beforeOutage}; backlog after ${OUTAGE_MS} ms down: ${backlog.len} entries; ` +
      `jobs enqueued at the restart: ${enqueuedAtRestart}; ` +
      `resumed ${resumedAfterMs} ms after the restart; ${added} events for ${JOBS} jobs (${reruns} re-run) in ${Date.now() - t0} ms`,
  );
});
