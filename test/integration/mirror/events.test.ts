/**
 * The history mirror, transition by transition, on real Redis and a real
 * PostgreSQL database (fresh and migrated).
 *
 * Part 1 drives every transition through the store (the Lua scripts):
 * enqueue (waiting and delayed), promote, claim, progress, log lines,
 * complete, retry_scheduled (to delayed and to waiting), failed (error and
 * lease expired), stalled (reaper), released, cancel of a waiting, a delayed
 * and an active job, retried_from_dlq. The events streams are read (XRANGE,
 * nothing consumed) before the mirror writer runs; then a real MirrorWriter
 * loop (small batches, so a job's events span several transactions) mirrors
 * them, and the test compares: exactly one job_events row per stream entry,
 * same fields, in stream order per job; one job_executions row per
 * execution with the right outcome, times and duration; dead_letter_jobs
 * holding payload + lastError while a job is failed and losing the row on
 * retried_from_dlq; job_logs holding the log lines.
 *
 * Part 2 is unit-style: project() on its own, and writeBatch() replays
 * (the same entries twice, older batches after newer ones) against the
 * real schema: the projection never goes backwards and no row is added.
 */
import { MirrorWriter } from '../../../src/mirror/mirror-writer';
import { writeBatch } from '../../../src/mirror/batch-writer';
import { project, StreamEntry } from '../../../src/mirror/projection';
import { EnqueueInput, normalizeEnqueue } from '../../../src/core/job-options';
import {
  captureStreams,
  eventRows,
  expectedEventRow,
  groupBy,
  msOf,
  outbox,
} from '../../support/mirror';
import { openTestDb, TestDb } from '../../support/postgres';
import { openStore, sleep, TestStore } from '../../support/redis';

jest.setTimeout(60_000);

const W = 'worker-ev';
const LEASE_MS = 60_000;

let t: TestStore;
let u: TestStore;
let db: TestDb;

beforeAll(async () => {
  t = await openStore('audit-events');
  u = await openStore('audit-proj');
  db = await openTestDb('events');
});
afterAll(async () => {
  await t?.close();
  await u?.close();
  await db?.close();
});

async function enq(s: TestStore, input: EnqueueInput): Promise<string> {
  const [r] = await s.store.enqueue([normalizeEnqueue(input, 1_000_000)]);
  return r.id;
}

async function claimOne(s: TestStore, queue: string, id: string, leaseMs = LEASE_MS) {
  const c = await s.store.claim(queue, 1, leaseMs, W);
  expect(c.jobs.map((j) => j.id)).toEqual([id]);
  return c.jobs[0];
}

/** Runs a real writer loop (batches of `batchSize`) until every stream is mirrored, then stops it. */
async function mirror(batchSize: number): Promise<number> {
  const queues = await t.stores.queues.list();
  const w = new MirrorWriter(t.stores, db.dataSource, {
    writerId: `aw-${batchSize}-${Date.now()}`,
    batchSize,
    idleMs: 5,
  });
  w.start();
  const deadline = Date.now() + 20_000;
  try {
    for (;;) {
      const o = await outbox(t.redis, t, queues);
      if (o.len === 0 && o.pending === 0) break;
      if (Date.now() > deadline)
        throw new Error(`writer did not drain the streams: ${JSON.stringify(o)}`);
      await sleep(20);
    }
  } finally {
    await w.stop();
  }
  return w.stats.events;
}

interface ExecExpect {
  x: number;
  outcome: string;
  error?: string | RegExp | null;
}

describe('every transition is mirrored (real writer loop)', () => {
  const QUEUES = ['ev-a', 'ev-b', 'ev-c', 'ev-d', 'ev-e', 'ev-f'];
  /** Every stream entry captured before the writer ran, over both phases. */
  const captured: StreamEntry[] = [];
  /** The event names each job must have produced, in order (one per transition). */
  const expected = new Map<string, string[]>();
  const ids: Record<string, string> = {};

  /** Checks job_events against the captured entries: one row per entry, same fields, stream order per job. */
  async function checkEvents(): Promise<void> {
    const nonLog = captured.filter((e) => e.fields.e !== 'log');
    const rows = await eventRows(db.dataSource, Object.values(ids));
    expect(rows).toHaveLength(nonLog.length);
    const want = groupBy(nonLog.map(expectedEventRow), (r) => r.job_id);
    const got = groupBy(rows, (r) => r.job_id);
    for (const [name, id] of Object.entries(ids)) {
      // What the scripts emitted is what the test drove: one event per transition.
      expect([name, (want.get(id) ?? []).map((r) => r.event)]).toEqual([name, expected.get(id)]);
      // And every entry became exactly one row, field for field, in stream order.
      expect([name, got.get(id)]).toEqual([name, want.get(id)]);
    }
    // Stream order also per (stream_ms, stream_seq), the order GET /jobs/:id/events serves.
    const ordered = await db.dataSource.query(
      `SELECT job_id::text, event FROM job_timeline WHERE job_id = ANY($1::uuid[]) ORDER BY job_id, stream_ms, stream_seq`,
      [Object.values(ids)],
    );
    for (const [id, evs] of groupBy(
      ordered as { job_id: string; event: string }[],
      (r) => r.job_id,
    )) {
      expect(evs.map((r) => r.event)).toEqual(expected.get(id));
    }
  }

  /** Checks job_executions of one job: one row per claim, outcome, worker, times and duration from the stream. */
  async function checkExecutions(name: string, want: ExecExpect[]): Promise<void> {
    const id = ids[name];
    const rows = await db.dataSource.query(
      `SELECT * FROM job_executions WHERE job_id = $1 ORDER BY execution_seq`,
      [id],
    );
    expect([name, rows.map((r: any) => [r.execution_seq, r.outcome])]).toEqual([
      name,
      want.map((w) => [w.x, w.outcome]),
    ]);
    const evs = captured.filter((e) => e.fields.j === id && e.fields.e !== 'log');
    for (const [i, w] of want.entries()) {
      const r = rows[i];
      const claim = evs.find((e) => e.fields.e === 'claimed' && Number(e.fields.x) === w.x)!;
      // The event that ended execution x: the first event after its claim that leaves 'active'.
      const end = evs.find(
        (e) => Number(e.fields.x) === w.x && e.fields.f === 'active' && e.fields.t !== 'active',
      )!;
      expect(claim).toBeDefined();
      expect(end).toBeDefined();
      expect(r.queue).toBe(claim.queue);
      expect(r.attempt).toBe(Number(claim.fields.a));
      expect(r.worker_id).toBe(W);
      expect(msOf(r.started_at)).toBe(Number(claim.fields.at));
      expect(msOf(r.finished_at)).toBe(Number(end.fields.at));
      expect(r.duration_ms).toBe(Number(end.fields.at) - Number(claim.fields.at));
      if (end.fields.ms !== undefined) expect(r.duration_ms).toBe(Number(end.fields.ms));
      if (w.error instanceof RegExp) expect(r.error).toMatch(w.error);
      else if (w.error !== undefined) expect(r.error).toBe(w.error);
    }
  }

  async function job(name: string): Promise<any> {
    const [row] = await db.dataSource.query(`SELECT * FROM jobs WHERE id = $1`, [ids[name]]);
    return row;
  }

  async function dlq(): Promise<any[]> {
    return db.dataSource.query(
      `SELECT * FROM dead_letter_jobs WHERE job_id = ANY($1::uuid[]) ORDER BY queue`,
      [Object.values(ids)],
    );
  }

  test('phase 1: enqueue, promote, claim, progress, log, complete, retry, fail, stall, release, cancel', async () => {
    // A: delayed → promoted → claimed → progress (+ 3 log lines) → completed
    const a = (ids.a = await enq(t, {
      queue: 'ev-a',
      type: 'audit.a',
      payload: { n: 1 },
      delayMs: 40,
      priority: 5,
    }));
    await sleep(80);
    expect((await t.store.promoteDelayed('ev-a', 10)).promoted).toBe(1);
    const ca = await claimOne(t, 'ev-a', a);
    await t.store.progress('ev-a', a, ca.lockToken, W, { pct: 50 }, [
      { level: 'info', message: 'hello' },
      { level: 'warn', message: 'careful | with pipes' },
    ]);
    await t.store.progress('ev-a', a, ca.lockToken, W, undefined, [
      { level: 'error', message: 'boom' },
    ]);
    await sleep(15);
    expect(
      await t.store.complete('ev-a', W, [{ id: a, lockToken: ca.lockToken, result: { ok: 1 } }]),
    ).toEqual(['completed']);
    expected.set(a, ['enqueued', 'promoted', 'claimed', 'progress', 'completed']);

    // B: error → retry_scheduled (backoff: delayed) → promoted → claimed → timeout → retry_scheduled
    // (no backoff: waiting) → claimed → unrecoverable error → failed (DLQ). Phase 2 retries it.
    const b = (ids.b = await enq(t, {
      queue: 'ev-b',
      type: 'audit.b',
      payload: { n: 2 },
      maxAttempts: 3,
    }));
    let cb = await claimOne(t, 'ev-b', b);
    await sleep(5);
    expect(
      await t.store.fail('ev-b', b, cb.lockToken, {
        error: 'first error',
        retryable: true,
        delayMs: 30,
        reason: 'error',
        workerId: W,
      }),
    ).toBe('delayed');
    await sleep(60);
    expect((await t.store.promoteDelayed('ev-b', 10)).promoted).toBe(1);
    cb = await claimOne(t, 'ev-b', b);
    await sleep(5);
    expect(
      await t.store.fail('ev-b', b, cb.lockToken, {
        error: 'took too long',
        retryable: true,
        delayMs: 0,
        reason: 'timeout',
        workerId: W,
      }),
    ).toBe('waiting');
    cb = await claimOne(t, 'ev-b', b);
    await sleep(5);
    expect(
      await t.store.fail('ev-b', b, cb.lockToken, {
        error: 'fatal error',
        retryable: false,
        delayMs: 0,
        reason: 'error',
        workerId: W,
      }),
    ).toBe('failed');
    expected.set(b, [
      'enqueued',
      'claimed',
      'retry_scheduled',
      'promoted',
      'claimed',
      'retry_scheduled',
      'claimed',
      'failed',
    ]);

    // C: lease expires → reaper: stalled (back to waiting) → claimed → lease expires on the last attempt → stalled + failed (DLQ)
    const c = (ids.c = await enq(t, {
      queue: 'ev-c',
      type: 'audit.c',
      payload: { n: 3 },
      maxAttempts: 2,
    }));
    await claimOne(t, 'ev-c', c, 30);
    await sleep(60);
    expect((await t.store.reapExpired('ev-c', 10)).reaped).toBe(1);
    await claimOne(t, 'ev-c', c, 30);
    await sleep(60);
    expect((await t.store.reapExpired('ev-c', 10)).reaped).toBe(1);
    expected.set(c, ['enqueued', 'claimed', 'stalled', 'claimed', 'stalled', 'failed']);

    // D: released on shutdown (attempt refunded) → claimed → completed
    const d = (ids.d = await enq(t, { queue: 'ev-d', type: 'audit.d', payload: { n: 4 } }));
    const cd = await claimOne(t, 'ev-d', d);
    await sleep(5);
    expect(await t.store.release('ev-d', W, [{ id: d, lockToken: cd.lockToken }])).toEqual([
      'released',
    ]);
    const cd2 = await claimOne(t, 'ev-d', d);
    expect(
      await t.store.complete('ev-d', W, [{ id: d, lockToken: cd2.lockToken, result: null }]),
    ).toEqual(['completed']);
    expected.set(d, ['enqueued', 'claimed', 'released', 'claimed', 'completed']);

    // E: cancel of a waiting job and of a delayed one
    const e = (ids.e = await enq(t, { queue: 'ev-e', type: 'audit.e', payload: { n: 5 } }));
    expect(await t.store.cancel('ev-e', e)).toBe('cancelled');
    const e2 = (ids.e2 = await enq(t, {
      queue: 'ev-e',
      type: 'audit.e',
      payload: { n: 6 },
      delayMs: 600_000,
    }));
    expect(await t.store.cancel('ev-e', e2)).toBe('cancelled');
    expected.set(e, ['enqueued', 'cancelled']);
    expected.set(e2, ['enqueued', 'cancelled']);

    // F: cancel of an active job: cancel_requested, then the holder's ack ends it cancelled;
    // F2: the holder reacts to the abort by failing with reason cancelled.
    const f = (ids.f = await enq(t, { queue: 'ev-f', type: 'audit.f', payload: { n: 7 } }));
    const cf = await claimOne(t, 'ev-f', f);
    expect(await t.store.cancel('ev-f', f)).toBe('active');
    await sleep(5);
    expect(
      await t.store.complete('ev-f', W, [
        { id: f, lockToken: cf.lockToken, result: { late: true } },
      ]),
    ).toEqual(['cancelled']);
    const f2 = (ids.f2 = await enq(t, { queue: 'ev-f', type: 'audit.f', payload: { n: 8 } }));
    const cf2 = await claimOne(t, 'ev-f', f2);
    expect(await t.store.cancel('ev-f', f2)).toBe('active');
    expect(
      await t.store.fail('ev-f', f2, cf2.lockToken, {
        error: 'aborted',
        retryable: true,
        delayMs: 0,
        reason: 'cancelled',
        workerId: W,
      }),
    ).toBe('cancelled');
    expected.set(f, ['enqueued', 'claimed', 'cancel_requested', 'cancelled']);
    expected.set(f2, ['enqueued', 'claimed', 'cancel_requested', 'cancelled']);

    const entries = await captureStreams(t.redis, t, QUEUES);
    captured.push(...entries);
    expect(await mirror(4)).toBe(entries.length);

    await checkEvents();

    // job_logs: the log lines of A, in order, with their attempt; none became a job_events row.
    const logs = await db.dataSource.query(`SELECT * FROM job_logs ORDER BY stream_ms, stream_seq`);
    expect(logs.map((l: any) => [l.job_id, l.attempt, l.level, l.message])).toEqual([
      [a, 1, 'info', 'hello'],
      [a, 1, 'warn', 'careful | with pipes'],
      [a, 1, 'error', 'boom'],
    ]);
    const logEntries = entries.filter((x) => x.fields.e === 'log');
    expect(logs.map((l: any) => `${l.stream_ms}-${l.stream_seq}`)).toEqual(
      logEntries.map((x) => x.id),
    );
    expect(logs.map((l: any) => msOf(l.at))).toEqual(logEntries.map((x) => Number(x.fields.at)));

    // job_executions: one row per execution, the right outcome, times and duration.
    await checkExecutions('a', [{ x: 1, outcome: 'completed', error: null }]);
    await checkExecutions('b', [
      { x: 1, outcome: 'failed', error: 'first error' },
      { x: 2, outcome: 'timeout', error: 'took too long' },
      { x: 3, outcome: 'failed', error: 'fatal error' },
    ]);
    await checkExecutions('c', [
      { x: 1, outcome: 'stalled' },
      { x: 2, outcome: 'stalled', error: /lease expired/ },
    ]);
    await checkExecutions('d', [
      { x: 1, outcome: 'released' },
      { x: 2, outcome: 'completed' },
    ]);
    await checkExecutions('e', []);
    await checkExecutions('e2', []);
    await checkExecutions('f', [{ x: 1, outcome: 'cancelled' }]);
    await checkExecutions('f2', [{ x: 1, outcome: 'cancelled', error: 'aborted' }]);

    // dead_letter_jobs: the failed jobs with their payload and last error.
    const dl = await dlq();
    expect(dl.map((r: any) => [r.job_id, r.queue, r.type, r.payload, r.attempts])).toEqual([
      [b, 'ev-b', 'audit.b', '{"n":2}', 3],
      [c, 'ev-c', 'audit.c', '{"n":3}', 2],
    ]);
    expect(dl[0].last_error).toBe('fatal error');
    expect(dl[1].last_error).toMatch(/lease expired.*attempt 2 of 2/);
    const failedAt = (id: string) =>
      Number(entries.find((x) => x.fields.j === id && x.fields.e === 'failed')!.fields.at);
    expect(msOf(dl[0].failed_at)).toBe(failedAt(b));
    expect(msOf(dl[1].failed_at)).toBe(failedAt(c));

    // The projection: each job's current state.
    const ja = await job('a');
    expect([
      ja.status,
      ja.attempts,
      ja.execution_seq,
      ja.result,
      ja.progress,
      ja.priority,
      ja.payload,
      ja.worker_id,
    ]).toEqual(['completed', 1, 1, '{"ok":1}', '{"pct":50}', 5, '{"n":1}', W]);
    expect(msOf(ja.finished_at)).toBe(
      Number(entries.find((x) => x.fields.j === a && x.fields.e === 'completed')!.fields.at),
    );
    const jb = await job('b');
    expect([jb.status, jb.attempts, jb.execution_seq, jb.last_error, jb.max_attempts]).toEqual([
      'failed',
      3,
      3,
      'fatal error',
      3,
    ]);
    const jc = await job('c');
    expect([jc.status, jc.attempts, jc.execution_seq]).toEqual(['failed', 2, 2]);
    expect(jc.last_error).toMatch(/lease expired/);
    const jd = await job('d');
    expect([jd.status, jd.attempts, jd.execution_seq, jd.result]).toEqual([
      'completed',
      1,
      2,
      'null',
    ]);
    for (const n of ['e', 'e2', 'f', 'f2']) {
      const j = await job(n);
      expect([n, j.status, j.finished_at === null]).toEqual([n, 'cancelled', false]);
    }
    // The failed jobs stay in Redis; what Redis says agrees with the projection.
    for (const [n, q] of [
      ['b', 'ev-b'],
      ['c', 'ev-c'],
    ]) {
      const r = await t.store.getJob(q, ids[n]);
      const p = await job(n);
      expect([n, r!.status, r!.attempts, r!.lastError]).toEqual([
        n,
        p.status,
        p.attempts,
        p.last_error,
      ]);
    }
  });

  test('phase 2: retried_from_dlq removes the dead-letter row; the job runs again', async () => {
    const { b, c } = ids;
    expect(await t.stores.deadLetters.retry('ev-b', b, { n: 22 })).toBe('waiting');
    const cb = await claimOne(t, 'ev-b', b);
    expect(
      await t.store.complete('ev-b', W, [{ id: b, lockToken: cb.lockToken, result: 'done' }]),
    ).toEqual(['completed']);
    expected.get(b)!.push('retried_from_dlq', 'claimed', 'completed');
    expect(await t.stores.deadLetters.retry('ev-c', c)).toBe('waiting');
    expected.get(c)!.push('retried_from_dlq');

    const entries = await captureStreams(t.redis, t, QUEUES);
    expect(entries.map((x) => x.fields.e)).toEqual([
      'retried_from_dlq',
      'claimed',
      'completed',
      'retried_from_dlq',
    ]);
    captured.push(...entries);
    expect(await mirror(2)).toBe(entries.length);

    await checkEvents();
    expect(await dlq()).toEqual([]);
    const jb = await job('b');
    expect([jb.status, jb.attempts, jb.execution_seq, jb.payload, jb.result]).toEqual([
      'completed',
      1,
      4,
      '{"n":22}',
      '"done"',
    ]);
    const jc = await job('c');
    expect([jc.status, jc.attempts, jc.finished_at]).toEqual(['waiting', 0, null]);
    await checkExecutions('b', [
      { x: 1, outcome: 'failed' },
      { x: 2, outcome: 'timeout' },
      { x: 3, outcome: 'failed' },
      { x: 4, outcome: 'completed', error: null },
    ]);
    // Nothing was written twice over the two phases.
    const [{ n, d }] = await db.dataSource.query(
      `SELECT count(*)::int AS n, count(DISTINCT (queue, stream_ms, stream_seq))::int AS d FROM job_timeline`,
    );
    expect([n, d]).toEqual([captured.filter((x) => x.fields.e !== 'log').length, n]);
  });
});

describe('projection + writeBatch (unit-style, real schema)', () => {
  const Q = 'proj';
  let x: string;
  let y: string;
  let entries: StreamEntry[];

  /** Every row the mirror holds for the given jobs, in a comparable form. */
  async function snapshot(jobIds: string[]) {
    const q = (sql: string) => db.dataSource.query(sql, [jobIds]);
    return JSON.parse(
      JSON.stringify({
        jobs: await q(`SELECT * FROM jobs WHERE id = ANY($1::uuid[]) ORDER BY id`),
        events: await q(`SELECT * FROM job_timeline WHERE job_id = ANY($1::uuid[]) ORDER BY queue, stream_ms, stream_seq`),
        executions: await q(
          `SELECT * FROM job_executions WHERE job_id = ANY($1::uuid[]) ORDER BY job_id, execution_seq`,
        ),
        dlq: await q(
          `SELECT * FROM dead_letter_jobs WHERE job_id = ANY($1::uuid[]) ORDER BY job_id`,
        ),
        logs: await q(`SELECT * FROM job_logs WHERE job_id = ANY($1::uuid[]) ORDER BY queue, stream_ms, stream_seq`),
      }),
    );
  }

  const write = (batch: StreamEntry[]) =>
    db.dataSource.transaction((m) => writeBatch(m, project(batch)));

  /** Deletes the mirror's rows of the jobs, to replay from scratch. */
  async function wipe(jobIds: string[]): Promise<void> {
    for (const table of ['job_events', 'job_executions', 'dead_letter_jobs', 'job_logs']) {
      await db.dataSource.query(`DELETE FROM ${table} WHERE job_id = ANY($1::uuid[])`, [jobIds]);
    }
    await db.dataSource.query(`DELETE FROM jobs WHERE id = ANY($1::uuid[])`, [jobIds]);
  }

  beforeAll(async () => {
    // X: fails, leaves the DLQ, fails again (so DLQ rows come and go); Y: a plain success.
    x = await enq(u, { queue: Q, type: 'proj.x', payload: { v: 1 }, maxAttempts: 2 });
    y = await enq(u, { queue: Q, type: 'proj.y', payload: { v: 2 } });
    let c = await u.store.claim(Q, 2, LEASE_MS, W);
    const tx = c.jobs.find((j) => j.id === x)!.lockToken;
    const ty = c.jobs.find((j) => j.id === y)!.lockToken;
    await u.store.progress(Q, x, tx, W, 10, [{ level: 'info', message: 'x runs' }]);
    await u.store.fail(Q, x, tx, {
      error: 'e1',
      retryable: true,
      delayMs: 0,
      reason: 'error',
      workerId: W,
    });
    await u.store.complete(Q, W, [{ id: y, lockToken: ty, result: { y: true } }]);
    c = await u.store.claim(Q, 1, LEASE_MS, W);
    await u.store.fail(Q, x, c.jobs[0].lockToken, {
      error: 'e2',
      retryable: true,
      delayMs: 0,
      reason: 'error',
      workerId: W,
    });
    await u.stores.deadLetters.retry(Q, x, { v: 11 });
    c = await u.store.claim(Q, 1, LEASE_MS, W);
    await u.store.progress(Q, x, c.jobs[0].lockToken, W, 20, []);
    await u.store.fail(Q, x, c.jobs[0].lockToken, {
      error: 'e3',
      retryable: false,
      delayMs: 0,
      reason: 'error',
      workerId: W,
    });
    entries = await captureStreams(u.redis, u, [Q]);
    expect(
      entries.filter((e) => e.fields.j === x && e.fields.e !== 'log').map((e) => e.fields.e),
    ).toEqual([
      'enqueued',
      'claimed',
      'progress',
      'retry_scheduled',
      'claimed',
      'failed',
      'retried_from_dlq',
      'claimed',
      'progress',
      'failed',
    ]);
  });

  test('project(): one event row per entry, logs apart, a job enqueued in the batch written once, executions and DLQ changes', () => {
    const b = project(entries);
    expect(b.events).toHaveLength(entries.length - 1);
    expect(b.logs.map((l) => [l.jobId, l.level, l.message, l.attempt])).toEqual([
      [x, 'info', 'x runs', 1],
    ]);
    // Both jobs were enqueued in this batch: their later events are folded
    // into the insert row (one row write), so no patch is left.
    expect(b.inserts.map((i) => [i.id, i.type, i.status, i.maxAttempts, i.payload])).toEqual([
      [x, 'proj.x', 'failed', 2, '{"v":11}'],
      [y, 'proj.y', 'completed', 3, '{"v":2}'],
    ]);
    expect(b.patches).toHaveLength(0);
    const ix = b.inserts.find((i) => i.id === x)!;
    const last = entries.filter((e) => e.fields.j === x).pop()!;
    expect(`${ix.streamMs}-${ix.streamSeq}`).toBe(last.id);
    expect([ix.status, ix.attempts, ix.executionSeq, ix.lastError, ix.progress, ix.payload]).toEqual([
      'failed',
      1,
      3,
      'e3',
      '20',
      '{"v":11}',
    ]);
    // Without the enqueued entries the same events make one merged patch per job.
    const noInsert = project(entries.filter((e) => e.fields.e !== 'enqueued'));
    const px = noInsert.patches.find((p) => p.id === x)!;
    expect([px.status, px.attempts, px.executionSeq, px.lastError, px.progress, px.payload]).toEqual([
      'failed',
      1,
      3,
      'e3',
      '20',
      '{"v":11}',
    ]);
    // Executions that started and ended in the batch are written once, by their end row.
    expect(b.starts).toEqual([]);
    const startedAt = new Map(
      entries.filter((e) => e.fields.e === 'claimed').map((e) => [`${e.fields.j}/${e.fields.x}`, Number(e.fields.at)]),
    );
    expect(b.ends.map((e) => [e.jobId, e.executionSeq, e.outcome, e.startedAt === startedAt.get(`${e.jobId}/${e.executionSeq}`)])).toEqual([
      [x, 1, 'failed', true],
      [y, 1, 'completed', true],
      [x, 2, 'failed', true],
      [x, 3, 'failed', true],
    ]);
    // The last DLQ change of a job wins: X is in the DLQ (failed again after its retry).
    expect(b.dlq.map((d) => [d.jobId, d.present, d.lastError])).toEqual([[x, true, 'e3']]);
    expect(b.finished).toEqual([{ queue: Q, jobId: y, status: 'completed' }]);
    // The whole stream in one batch equals the stream entry by entry.
    const one = entries.map((e) => project([e]));
    expect(one.flatMap((p) => p.events)).toEqual(b.events);
  });

  test('writing the same entries twice (whole, or entry by entry) changes nothing and adds no rows', async () => {
    await wipe([x, y]);
    await write(entries);
    const first = await snapshot([x, y]);
    expect(first.jobs.map((j: any) => [j.id, j.status])).toEqual(
      [
        [x, 'failed'],
        [y, 'completed'],
      ].sort(),
    );
    expect(first.events).toHaveLength(entries.length - 1);
    expect(first.dlq.map((d: any) => [d.job_id, d.last_error, d.payload])).toEqual([
      [x, 'e3', '{"v":11}'],
    ]);
    await write(entries);
    expect(await snapshot([x, y])).toEqual(first);
    for (const e of entries) await write([e]);
    expect(await snapshot([x, y])).toEqual(first);
  });

  test('an older batch written after newer ones never moves the projection back nor adds rows', async () => {
    await wipe([x, y]);
    // In order, in small batches, as the writer does.
    const batches: StreamEntry[][] = [];
    for (let i = 0; i < entries.length; i += 2) batches.push(entries.slice(i, i + 2));
    for (const b of batches) await write(b);
    const final = await snapshot([x, y]);
    expect(final.jobs.map((j: any) => j.status)).toEqual(
      x < y ? ['failed', 'completed'] : ['completed', 'failed'],
    );
    // Replays of every older batch (newest first, then oldest first, then single
    // entries): a writer that stalled past its lease commits late, a replacement
    // re-writes what it took over.
    for (const b of [...batches].reverse()) {
      await write(b);
      expect(await snapshot([x, y])).toEqual(final);
    }
    for (const b of batches) {
      await write(b);
      expect(await snapshot([x, y])).toEqual(final);
    }
    for (let i = entries.length - 1; i >= 0; i--) {
      await write([entries[i]]);
      expect(await snapshot([x, y])).toEqual(final);
    }
  });

  test('older events arriving after newer ones (first writes out of order): status stays at the newest, one row per entry', async () => {
    await wipe([x, y]);
    const enqueued = entries.filter((e) => e.fields.e === 'enqueued');
    const rest = entries.filter((e) => e.fields.e !== 'enqueued');
    await write(enqueued);
    // Newest first, one entry per batch.
    for (const e of [...rest].reverse()) await write([e]);
    const s = await snapshot([x, y]);
    const jx = s.jobs.find((j: any) => j.id === x);
    const jy = s.jobs.find((j: any) => j.id === y);
    const lastX = entries.filter((e) => e.fields.j === x).pop()!.id;
    expect([
      jx.status,
      jx.attempts,
      jx.execution_seq,
      jx.last_error,
      `${jx.last_event_ms}-${jx.last_event_seq}`,
    ]).toEqual(['failed', 1, 3, 'e3', lastX]);
    expect([jy.status, jy.result]).toEqual(['completed', '{"y":true}']);
    expect(s.events).toHaveLength(entries.length - 1);
    expect(s.logs).toHaveLength(1);
    expect(s.executions.map((e: any) => [e.job_id, e.execution_seq, e.outcome])).toEqual(
      [
        [x, 1, 'failed'],
        [x, 2, 'failed'],
        [x, 3, 'failed'],
        [y, 1, 'completed'],
      ].sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0)),
    );
    // The DLQ reflects the newest failure, not the older ones written after it.
    expect(s.dlq.map((d: any) => [d.job_id, d.last_error, d.attempts])).toEqual([[x, 'e3', 1]]);
  });
});
