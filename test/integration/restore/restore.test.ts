/**
 * Restore (DESIGN.md: "Because Postgres holds every non-terminal job, Redis
 * can be rebuilt from it"): after Redis loses its data (FLUSHALL on a private
 * redis-server), `npm run restore` (scripts/restore.js) and the audit role's
 * start-up check rebuild each queue from PostgreSQL, detected by the queue's
 * missing epoch marker. Real Redis and PostgreSQL throughout.
 *
 * 1. In process: a queue with waiting jobs of several priorities, delayed,
 *    active, dead-lettered, retried-from-DLQ, cancel-requested, completed and
 *    cancelled jobs is mirrored, flushed and restored: the waiting set comes
 *    back in the same order, delayed jobs with the same runAt, the DLQ with
 *    the same entries, active jobs waiting again with a `stalled` event
 *    (reason `restored`, attempt refunded); a second run restores nothing and
 *    a replayed restore (marker deleted) skips every job.
 * 2. Processes: a worker+scheduler+audit process runs diag jobs; Redis is
 *    flushed mid-run and `node scripts/restore.js` restores it; later the
 *    process is killed, Redis flushed again and a new process's start-up
 *    check restores it. Every job ends completed exactly once in PostgreSQL
 *    with consistent executions, and restore then finds nothing to do.
 */
import { execFile } from 'node:child_process';
import { resolve } from 'node:path';
import { MirrorWriter } from '../../../src/mirror/mirror-writer';
import { QueueRestorer } from '../../../src/restore/restore';
import { retireExpiredDays } from '../../../src/postgres/partition-retire';
import { DAY_MS } from '../../../src/postgres/partitions';
import type { Job } from '../../../src/core/job';
import { normalizeEnqueue, EnqueueInput } from '../../../src/core/job-options';
import { queuesKey } from '../../../src/redis/keys';
import { openTestDb, TestDb } from '../../support/postgres';
import { killAll, SluiceProcess, startSluice } from '../../support/process';
import { openStore, readEvents, sleep, TestStore } from '../../support/redis';
import {
  RedisServer,
  startRedisServer,
  stopAllRedisServers,
  removeDir,
  waitUntil,
} from '../../support/redis-server';

jest.setTimeout(240_000);

const RESTORE_JS = resolve(__dirname, '../../../scripts/restore.js');

let server: RedisServer;
beforeAll(async () => {
  server = await startRedisServer({ name: 'restore' });
});
afterAll(async () => {
  await stopAllRedisServers();
  removeDir(server?.opts.dir);
});

const enq = (t: TestStore, input: EnqueueInput) =>
  t.store.enqueue([normalizeEnqueue(input, 1e6)]).then((r) => r[0].id);

/** Mirrors every pending event of the writer's queues into PostgreSQL. */
async function drain(w: MirrorWriter): Promise<void> {
  await (w as any).refreshOwnership();
  while ((await w.runOnce()) > 0);
}

/** What the restore must bring back, as the test reads it from Redis. */
async function redisState(t: TestStore, q: string) {
  const k = t.keys(q);
  const [waiting, delayed, failed] = await Promise.all([
    t.redis.zrange(k.waiting, 0, -1),
    t.redis.zrange(k.delayed, 0, -1, 'WITHSCORES'),
    t.redis.zrange(k.failed, 0, -1, 'WITHSCORES'),
  ]);
  return { waiting, delayed, failed };
}

/** The job fields a restore must preserve. */
function essentials(j: Job | null) {
  if (!j) return null;
  const {
    id,
    type,
    payload,
    status,
    priority,
    attempts,
    maxAttempts,
    backoff,
    timeoutMs,
    idempotencyKey,
    createdAt,
    runAt,
    executionSeq,
  } = j;
  return {
    id,
    type,
    payload,
    status,
    priority,
    attempts,
    maxAttempts,
    backoff,
    timeoutMs,
    idempotencyKey,
    createdAt,
    runAt,
    executionSeq,
  };
}

describe('restore in process', () => {
  let t: TestStore;
  let db: TestDb;
  beforeAll(async () => {
    t = await openStore('restore', server.url);
    db = await openTestDb('restore_a');
  });
  afterAll(async () => {
    await t?.close();
    await db?.close();
  });

  it('rebuilds waiting order, delays, the DLQ and active jobs; a second run restores nothing', async () => {
    const q = 'rq';
    const restorer = new QueueRestorer(db.dataSource, t.stores, { chunkSize: 7 });
    // As in the audit role (audit.service.ts): the restore check runs when a writer takes a queue over.
    const writer = (writerId: string) =>
      new MirrorWriter(t.stores, db.dataSource, {
        writerId,
        onAcquire: (queue) =>
          restorer.ensureQueue(queue, { lockToken: writerId }).then(() => undefined),
      });
    const w = writer('aw-a');

    // Claimed first (the only jobs yet): 2 to the DLQ, 1 cancel-requested, 3 stay active, 1 completes, 1 retried from the DLQ.
    // The retried job is the oldest of priority 0 but must come back last of them (retry = new sequence),
    // the active ones (priority 0 too) first: order is the sequence, not the creation time.
    const toFail = [
      await enq(t, { queue: q, type: 'f', priority: 90, maxAttempts: 1 }),
      await enq(t, { queue: q, type: 'f', priority: 90, maxAttempts: 1 }),
    ];
    const toRetry = await enq(t, {
      queue: q,
      type: 'r',
      priority: 0,
      maxAttempts: 1,
      payload: { retry: true },
    });
    const toCancel = await enq(t, { queue: q, type: 'c', priority: 80 });
    const toComplete = await enq(t, { queue: q, type: 'done', priority: 80 });
    const active: string[] = [];
    for (let i = 0; i < 3; i++)
      active.push(
        await enq(t, { queue: q, type: 'a', priority: 0, maxAttempts: 3, payload: { i } }),
      );
    const claimed = await t.store.claim(q, 8, 60_000, 'w1');
    expect(claimed.jobs.map((j) => j.id).sort()).toEqual(
      [...toFail, toRetry, toCancel, toComplete, ...active].sort(),
    );
    const token = (id: string) => claimed.jobs.find((j) => j.id === id)!.lockToken;
    for (const id of [...toFail, toRetry]) {
      await t.store.fail(q, id, token(id), {
        error: 'boom',
        retryable: false,
        delayMs: 0,
        reason: 'error',
        workerId: 'w1',
      });
    }
    await t.store.complete(q, 'w1', [
      { id: toComplete, lockToken: token(toComplete), result: { ok: 1 } },
    ]);
    expect(await t.store.cancel(q, toCancel)).toBe('active');

    // Waiting jobs of mixed priorities, one with a chunked payload, one with a big one, one with an idempotency key.
    const waiting: string[] = [];
    const prios = [0, 5, -3, 0, 5, 0, -3, 10, 0, 5];
    for (const [i, pr] of prios.entries())
      waiting.push(await enq(t, { queue: q, type: 'w', priority: pr, payload: { i } }));
    waiting.push(await enq(t, { queue: q, type: 'w', payload: { s: 'é'.repeat(100) } }));
    waiting.push(
      await enq(t, { queue: q, type: 'w', payload: { s: 'x'.repeat(5000) }, idempotencyKey: 'k1' }),
    );
    // Retried from the DLQ: a new sequence (back of its priority).
    expect(await t.stores.deadLetters.retry(q, toRetry)).toBe('waiting');
    const delayed: string[] = [];
    for (let i = 0; i < 3; i++)
      delayed.push(await enq(t, { queue: q, type: 'd', delayMs: 60_000 + i * 1000 }));
    const cancelled = await enq(t, { queue: q, type: 'x' });
    await t.store.cancel(q, cancelled);

    await drain(w);
    // The writer took the queue over: it has an epoch marker, recorded in PostgreSQL.
    const epoch0 = await t.redis.get(t.keys(q).epoch);
    expect(epoch0).toBeTruthy();
    expect(await db.dataSource.query(`SELECT epoch FROM queues WHERE name = $1`, [q])).toEqual([
      { epoch: epoch0 },
    ]);

    const before = await redisState(t, q);
    const live = [...waiting, toRetry, ...delayed, ...active, toCancel, ...toFail];
    const jobsBefore = new Map(
      await Promise.all(live.map(async (id) => [id, await t.store.getJob(q, id)] as const)),
    );
    // The expected waiting order after the restore: the old one, with the
    // active jobs back at their original place (priority, then sequence).
    const sq = async (id: string) =>
      Number(await t.redis.hget(t.keys(q).base + 'job:' + id, 'sq'));
    const expectedWaiting = await Promise.all(
      [...before.waiting, ...active].map(async (id) => ({
        id,
        pr: jobsBefore.get(id)!.priority,
        sq: await sq(id),
      })),
    );
    expectedWaiting.sort((a, b) => b.pr - a.pr || a.sq - b.sq);
    const prio0Before = expectedWaiting.filter((e) => e.pr === 0).map((e) => e.id);
    expect(prio0Before.slice(0, 3)).toEqual(active);
    expect(prio0Before[prio0Before.length - 1]).toBe(toRetry);
    await w.stop();
    // Restore reads the partitioned history (src/postgres/partitions.ts) wherever the rows are: as if two days had
    // passed with a one-day retention, today's partition is retired and the living jobs' rows are in `_kept` now.
    const retired = await retireExpiredDays(db.dataSource, 1, Date.now() + 2 * DAY_MS);
    expect(retired.map((r) => r.kept)).toContain(live.length);
    expect(
      (await db.dataSource.query(`SELECT DISTINCT tableoid::regclass::text AS t FROM jobs WHERE id = ANY($1::uuid[])`, [live])).map((r: { t: string }) => r.t),
    ).toEqual(['jobs_kept']);

    await t.redis.flushall();
    // As if the lost Redis's clock had been a minute ahead: PostgreSQL holds a
    // stream id from the "future". New events must still sort after it.
    const futureMs = Date.now() + 60_000;
    await db.dataSource.query(
      `INSERT INTO job_events (queue, stream_ms, stream_seq, job_id, at, event) VALUES ($1, $2, 7, $3, now(), 'progress')`,
      [q, futureMs, toComplete],
    );
    // As the writer does with every batch (src/mirror/batch-writer.ts): the queue's newest mirrored entry, which restore reads.
    await db.dataSource.query(
      `INSERT INTO queue_stream_tops (queue, stream_ms, stream_seq) VALUES ($1, $2, 7)
       ON CONFLICT (queue) DO UPDATE SET stream_ms = EXCLUDED.stream_ms, stream_seq = EXCLUDED.stream_seq`,
      [q, futureMs],
    );

    const reports = await restorer.checkAll();
    expect(reports).toEqual([
      {
        queue: q,
        action: 'restored',
        epoch: expect.any(String),
        counts: {
          waiting: waiting.length + 1,
          delayed: 3,
          active: 3,
          failed: 2,
          cancelled: 1,
          skipped: 0,
          blocked: 0,
        },
      },
    ]);
    const after = await redisState(t, q);
    expect(after.waiting).toEqual(expectedWaiting.map((e) => e.id));
    expect(after.delayed).toEqual(before.delayed);
    expect(after.failed).toEqual(before.failed);
    for (const id of [...waiting, toRetry, ...delayed, ...toFail]) {
      expect({ id, job: essentials(await t.store.getJob(q, id)) }).toEqual({
        id,
        job: essentials(jobsBefore.get(id)!),
      });
    }
    for (const id of toFail) expect((await t.store.getJob(q, id))!.lastError).toBe('boom');
    for (const id of active) {
      const j = (await t.store.getJob(q, id))!;
      expect(essentials(j)).toEqual({
        ...essentials(jobsBefore.get(id)!),
        status: 'waiting',
        attempts: 0,
      });
    }
    expect((await t.store.getJob(q, toCancel))!.status).toBe('cancelled');
    expect(await t.store.getJob(q, toComplete)).toBeNull();
    expect(await t.store.getJob(q, cancelled)).toBeNull();
    // One event per job that changed: stalled (reason restored) for the active ones, cancelled for the cancel-requested one.
    const ev = await readEvents(t.redis, t.keys(q).events);
    for (const e of ev) {
      const [ms, seq] = e.streamId.split('-').map(Number);
      expect(ms > futureMs || (ms === futureMs && seq > 7)).toBe(true);
    }
    expect(ev.map((e) => [e.e, e.j, e.f, e.t, e.a, e.r]).sort()).toEqual(
      [
        ...active.map((id) => ['stalled', id, 'active', 'waiting', '0', 'restored']),
        ['cancelled', toCancel, 'active', 'cancelled', '1', 'restored'],
      ].sort(),
    );
    expect(await t.redis.sismember(queuesKey(t.prefix), q)).toBe(1);
    const epoch1 = await t.redis.get(t.keys(q).epoch);
    expect(epoch1).toBe(reports[0].epoch);
    expect(
      await db.dataSource.query(`SELECT epoch, restores FROM queues WHERE name = $1`, [q]),
    ).toEqual([{ epoch: epoch1, restores: 1 }]);

    // A second run restores nothing.
    expect(await restorer.checkAll()).toEqual([
      {
        queue: q,
        action: 'intact',
        epoch: epoch1,
        counts: expect.objectContaining({ waiting: 0, skipped: 0 }),
      },
    ]);
    // A replayed restore (as if the first had died before setting the marker) touches no job.
    await t.redis.del(t.keys(q).epoch);
    const [again] = await restorer.checkAll();
    expect(again.action).toBe('restored');
    expect(again.counts).toEqual({
      waiting: 0,
      delayed: 0,
      active: 0,
      failed: 0,
      cancelled: 0,
      skipped: live.length,
      blocked: 0,
    });
    expect(await redisState(t, q)).toEqual(after);
    expect(await readEvents(t.redis, t.keys(q).events)).toHaveLength(ev.length);

    // The mirror records the restore: the active jobs waiting with attempts refunded, their executions closed as stalled.
    const w2 = writer('aw-b');
    await drain(w2);
    await w2.stop();
    const rows = await db.dataSource.query(
      `SELECT id, status, attempts FROM jobs WHERE id = ANY($1::uuid[]) ORDER BY id`,
      [[...active, toCancel]],
    );
    expect(rows).toEqual(
      [
        ...active.map((id) => ({ id, status: 'waiting', attempts: 0 })),
        { id: toCancel, status: 'cancelled', attempts: 1 },
      ].sort((a, b) => a.id.localeCompare(b.id)),
    );
    const ex = await db.dataSource.query(
      `SELECT job_id, execution_seq, outcome FROM job_executions WHERE job_id = ANY($1::uuid[]) ORDER BY job_id`,
      [active],
    );
    expect(ex).toEqual(
      [...active].sort().map((id) => ({ job_id: id, execution_seq: 1, outcome: 'stalled' })),
    );

    // The DLQ works again, and new jobs go after the restored ones of their priority.
    expect(await t.stores.deadLetters.retry(q, toFail[0])).toBe('waiting');
    const fresh = await enq(t, { queue: q, type: 'w' });
    const order = await t.redis.zrange(t.keys(q).waiting, 0, -1);
    const prio0 = order.filter((id) => id !== fresh && jobsBefore.get(id)!.priority === 0);
    expect(order.indexOf(fresh)).toBe(order.indexOf(prio0[prio0.length - 1]) + 1);
  });
});

/** Runs scripts/restore.js with the given environment; resolves with its output and exit code. */
function runRestore(env: Record<string, string>): Promise<{ code: number; out: string }> {
  return new Promise((res) => {
    execFile(
      process.execPath,
      [RESTORE_JS],
      { env: { PATH: process.env.PATH ?? '', ...env }, timeout: 60_000 },
      (err, stdout, stderr) =>
        res({ code: err ? Number((err as any).code ?? 1) : 0, out: stdout + stderr }),
    );
  });
}

describe('restore with real processes', () => {
  let t: TestStore;
  let db: TestDb;
  const procs: SluiceProcess[] = [];
  beforeAll(async () => {
    const admin = server.client();
    await admin.flushall();
    admin.disconnect();
    t = await openStore('restore-run', server.url);
    db = await openTestDb('restore_b');
  });
  afterAll(async () => {
    await killAll(procs);
    await t?.close();
    await db?.close();
  });

  it('FLUSHALL mid-run: restore brings every non-terminal job back once and each completes exactly once', async () => {
    const q = 'restoreq';
    const env = {
      REDIS_URL: server.url,
      REDIS_PREFIX: t.prefix,
      DATABASE_URL: db.url,
      ROLE: 'worker,scheduler,audit',
      QUEUES: '*',
      WORKER_CONCURRENCY: '4',
      LOCK_TTL_MS: '5000',
      HEARTBEAT_INTERVAL_MS: '500',
      REAPER_INTERVAL_MS: '500',
      SHUTDOWN_GRACE_MS: '1000',
      // This test is about `npm run restore` and the start-up check: the run-time watch
      // (test/integration/restore/runtime-loss.test.ts) only at reconnects here.
      REDIS_CHECK_INTERVAL_MS: '3600000',
    };
    const sql = (text: string, params: unknown[] = []) => db.dataSource.query(text, params);
    const countBy = async () => {
      const rows = (await sql(
        `SELECT status, count(*)::int AS n FROM jobs WHERE queue = $1 GROUP BY status`,
        [q],
      )) as { status: string; n: number }[];
      return Object.fromEntries(rows.map((r) => [r.status, r.n])) as Record<string, number>;
    };
    const nonTerminal = async () =>
      (await sql(
        `SELECT id, status FROM jobs WHERE queue = $1 AND status IN ('waiting', 'delayed', 'active')`,
        [q],
      )) as { id: string; status: string }[];
    const tally = (rows: { status: string }[]) => ({
      waiting: rows.filter((r) => r.status === 'waiting').length,
      delayed: rows.filter((r) => r.status === 'delayed').length,
      active: rows.filter((r) => r.status === 'active').length,
    });

    procs.push(await startSluice(env));
    const ids: string[] = [];
    const N = 160;
    for (let i = 0; i < N; i++)
      ids.push(
        await enq(t, { queue: q, type: 'diag.sleep', payload: { ms: 150 }, priority: i % 3 }),
      );
    // Delayed past both flushes.
    for (let i = 0; i < 4; i++)
      ids.push(await enq(t, { queue: q, type: 'diag.sleep', payload: { ms: 10 }, delayMs: 6000 }));
    // Dead-lettered: fail always, one attempt.
    const dead = [0, 1].map(() => ({ queue: q, type: 'diag.fail', maxAttempts: 1, priority: 10 }));
    ids.push(...(await Promise.all(dead.map((d) => enq(t, d)))));
    const deadIds = ids.slice(-2);

    // The queue got its epoch when the mirror writer took it over.
    await waitUntil(
      'epoch marker',
      async () => (await t.redis.exists(t.keys(q).epoch)) === 1,
      15_000,
    );
    await waitUntil(
      'mid-run: all jobs mirrored, some completed, some active, DLQ filled',
      async () => {
        const c = await countBy();
        const total = Object.values(c).reduce((a, b) => a + b, 0);
        return (
          total === ids.length &&
          (c.completed ?? 0) >= 20 &&
          (c.active ?? 0) > 0 &&
          (c.failed ?? 0) === 2
        );
      },
      60_000,
      20,
    );

    // ---- 1: FLUSHALL while the process runs, then `npm run restore`.
    await t.redis.flushall();
    await sleep(500); // a batch the writer had in flight commits
    const lost1 = await nonTerminal();
    expect(tally(lost1).waiting + tally(lost1).active).toBeGreaterThan(0);
    const r1 = await runRestore(env);
    expect(r1.code).toBe(0);
    const line1 = r1.out.split('\n').find((l) => l.startsWith(`${q}: restored`));
    expect(line1).toBeDefined();
    const { waiting, delayed, active } = tally(lost1);
    expect(line1).toContain(
      `${waiting} waiting, ${delayed} delayed, ${active} active (back to waiting, stalled), 2 failed (DLQ), 0 cancelled; 0 already in Redis`,
    );
    const stalledIds1 = lost1.filter((r) => r.status === 'active').map((r) => r.id);

    // ---- 2: kill the process, FLUSHALL, a new process's start-up check restores.
    const done1 = (await countBy()).completed ?? 0;
    await waitUntil(
      'progress after the first restore',
      async () => ((await countBy()).completed ?? 0) >= done1 + 20,
      60_000,
      20,
    );
    await waitUntil(
      'some job active again',
      async () => tally(await nonTerminal()).active > 0,
      30_000,
      10,
    );
    await killAll(procs);
    await sleep(300);
    await t.redis.flushall();
    const lost2 = await nonTerminal();
    const tally2 = tally(lost2);
    expect(tally2.active).toBeGreaterThan(0);
    const p2 = await startSluice(env);
    procs.push(p2);
    const restoredLine = p2
      .output()
      .split('\n')
      .find((l) => l.includes('restore check:') && l.includes(`${q}: restored`));
    expect(restoredLine).toBeDefined();
    expect(JSON.parse(restoredLine!).counts).toEqual({
      ...tally2,
      failed: 2,
      cancelled: 0,
      skipped: 0,
      blocked: 0,
    });
    const stalledIds2 = lost2.filter((r) => r.status === 'active').map((r) => r.id);

    // The DLQ works after the restores: retried with a payload that succeeds.
    await waitUntil(
      'restored DLQ',
      async () => (await t.redis.zcard(t.keys(q).failed)) === 2,
      15_000,
    );
    for (const id of deadIds)
      expect(await t.stores.deadLetters.retry(q, id, { times: 0 })).toBe('waiting');

    // Every job completes, exactly once.
    // (on a timeout the assertions below name the jobs that did not complete)
    await waitUntil(
      'every job completed in PostgreSQL',
      async () => ((await countBy()).completed ?? 0) === ids.length,
      60_000,
      100,
    ).catch(() => undefined);
    const finals = (await sql(`SELECT id, status, execution_seq FROM jobs WHERE queue = $1`, [
      q,
    ])) as { id: string; status: string; execution_seq: number }[];
    expect(finals.map((r) => r.id).sort()).toEqual([...ids].sort());
    expect(finals.filter((r) => r.status !== 'completed')).toEqual([]);
    const completedEvents = (await sql(
      `SELECT job_id, count(*)::int AS n FROM job_timeline WHERE queue = $1 AND event = 'completed' GROUP BY job_id`,
      [q],
    )) as { job_id: string; n: number }[];
    expect(completedEvents).toHaveLength(ids.length);
    expect(completedEvents.filter((r) => r.n !== 1)).toEqual([]);

    // Executions: 1..execution_seq, none left running, exactly one completed and it is the last.
    const ex = (await sql(
      `SELECT job_id, execution_seq, outcome FROM job_executions WHERE queue = $1 ORDER BY job_id, execution_seq`,
      [q],
    )) as {
      job_id: string;
      execution_seq: number;
      outcome: string;
    }[];
    const byJob = new Map<string, { execution_seq: number; outcome: string }[]>();
    for (const e of ex) byJob.set(e.job_id, [...(byJob.get(e.job_id) ?? []), e]);
    const problems: string[] = [];
    for (const f of finals) {
      const runs = byJob.get(f.id) ?? [];
      const seqs = runs.map((r) => r.execution_seq).join(',');
      const want = Array.from({ length: f.execution_seq }, (_, i) => i + 1).join(',');
      if (seqs !== want) problems.push(`${f.id}: executions ${seqs}, expected ${want}`);
      if (runs.some((r) => r.outcome === 'running'))
        problems.push(`${f.id}: an execution still running: ${runs.map((r) => r.outcome)}`);
      if (
        runs.filter((r) => r.outcome === 'completed').length !== 1 ||
        runs[runs.length - 1]?.outcome !== 'completed'
      ) {
        problems.push(`${f.id}: outcomes ${runs.map((r) => r.outcome)}`);
      }
    }
    expect(problems).toEqual([]);

    // Each job that was active when Redis was lost got one `stalled` (restored) event per restore.
    const restoredEvents = (await sql(
      `SELECT job_id FROM job_timeline WHERE queue = $1 AND event = 'stalled' AND reason = 'restored'`,
      [q],
    )) as { job_id: string }[];
    expect(restoredEvents.map((r) => r.job_id).sort()).toEqual(
      [...stalledIds1, ...stalledIds2].sort(),
    );

    // Running restore again restores nothing.
    const r3 = await runRestore(env);
    expect(r3.code).toBe(0);
    expect(r3.out).toContain(`${q}: intact`);
    expect(r3.out).toContain('nothing to restore');
    expect(await sql(`SELECT restores FROM queues WHERE name = $1`, [q])).toEqual([
      { restores: 2 },
    ]);
  });
});
