/**
 * An mirror writer that dies mid-mirroring is replaced, and the mirror ends
 * exact: one job_events row per stream entry (no duplicate, no gap), every
 * stream drained (XLEN 0, nothing pending), every job's projection at its
 * final state. Real Redis, real PostgreSQL, real processes.
 *
 * 1. Process level: a ROLE=audit process mirrors a few thousand events that
 *    the test produces through the store (enqueue, claim, progress + log,
 *    complete, retryable and fatal failures) on three queues, and is killed
 *    with SIGKILL in the middle. To kill it at the worst moment, after a
 *    batch is committed and before it is acked, the test runs on a private
 *    redis-server and freezes its writes (CLIENT PAUSE WRITE): the writer
 *    finishes its Postgres transaction and blocks on XACK; the test checks
 *    that its pending entries are in Postgres and kills it there. A second
 *    ROLE=audit process takes the queues over once the dead writer's
 *    ownership lease runs out (5 s) and must re-write those entries without
 *    duplicating them.
 * 2. In process, deterministic: a writer whose acknowledgement never runs
 *    (it dies after COMMIT, before XACK), and a writer whose transaction fails
 *    (it dies before COMMIT), each replaced by a second writer.
 */
import Redis from 'ioredis';
import { MirrorWriter } from '../../../src/mirror/mirror-writer';
import { MIRROR_GROUP } from '../../../src/redis/keys';
import { createDataSource, ensureDatabase } from '../../../src/postgres/data-source';
import { normalizeEnqueue } from '../../../src/core/job-options';
import {
  captureStreams,
  entriesAdded,
  eventRows,
  expectedEventRow,
  groupBy,
  outbox,
} from '../../support/mirror';
import { dropDatabase, freshDatabaseUrl, openTestDb, TestDb } from '../../support/postgres';
import { killAll, SluiceProcess, startSluice } from '../../support/process';
import { openStore, sleep, TestStore } from '../../support/redis';
import {
  RedisServer,
  removeDir,
  startRedisServer,
  stopAllRedisServers,
  waitUntil,
} from '../../support/redis-server';

jest.setTimeout(120_000);

const WID = 'crash-worker';

/** What the test expects of one job, kept while it drives the job. */
interface Expected {
  queue: string;
  events: string[];
  status: string;
  attempts: number;
  x: number;
  lastError: string | null;
  result: string | null;
  outcomes: string[];
}

/**
 * Drives `jobs` jobs of `queue` through their whole life with store calls,
 * recording what each must leave in the mirror. Per 5 jobs: 3 complete (one
 * after a progress update and a log line), 1 fails once then completes, 1
 * fails for good (DLQ). 76 stream entries per 20 jobs.
 * @returns the number of log entries produced.
 */
async function driveRound(
  t: TestStore,
  queue: string,
  jobs: number,
  round: number,
  exp: Map<string, Expected>,
): Promise<number> {
  const res = await t.store.enqueue(
    Array.from({ length: jobs }, (_, i) =>
      normalizeEnqueue(
        { queue, type: 'crash.job', payload: { round, i }, maxAttempts: 2 },
        1_000_000,
      ),
    ),
  );
  const idx = new Map<string, number>();
  res.forEach((r, i) => {
    idx.set(r.id, i);
    exp.set(r.id, {
      queue,
      events: ['enqueued'],
      status: 'waiting',
      attempts: 0,
      x: 0,
      lastError: null,
      result: null,
      outcomes: [],
    });
  });
  const c = await t.store.claim(queue, jobs, 600_000, WID);
  if (c.jobs.length !== jobs) throw new Error(`claimed ${c.jobs.length} of ${jobs}`);
  let logs = 0;
  const acks: { id: string; lockToken: string; result: { i: number } }[] = [];
  for (const j of c.jobs) {
    const e = exp.get(j.id)!;
    const i = idx.get(j.id)!;
    e.events.push('claimed');
    Object.assign(e, { status: 'active', attempts: 1, x: 1 });
    if (i % 5 === 1) {
      await t.store.progress(queue, j.id, j.lockToken, WID, { i }, [
        { level: 'info', message: `job ${i} halfway` },
      ]);
      e.events.push('progress');
      logs++;
    }
    if (i % 5 <= 2) acks.push({ id: j.id, lockToken: j.lockToken, result: { i } });
    else if (i % 5 === 3) {
      const s = await t.store.fail(queue, j.id, j.lockToken, {
        error: 'oops',
        retryable: true,
        delayMs: 0,
        reason: 'error',
        workerId: WID,
      });
      if (s !== 'waiting') throw new Error(`retry went to ${s}`);
      e.events.push('retry_scheduled');
      e.outcomes.push('failed');
      Object.assign(e, { status: 'waiting', lastError: 'oops' });
    } else {
      const s = await t.store.fail(queue, j.id, j.lockToken, {
        error: 'fatal',
        retryable: false,
        delayMs: 0,
        reason: 'error',
        workerId: WID,
      });
      if (s !== 'failed') throw new Error(`fatal failure went to ${s}`);
      e.events.push('failed');
      e.outcomes.push('failed');
      Object.assign(e, { status: 'failed', lastError: 'fatal' });
    }
  }
  const retried = await t.store.claim(queue, jobs, 600_000, WID);
  for (const j of retried.jobs) {
    const e = exp.get(j.id)!;
    e.events.push('claimed');
    Object.assign(e, { status: 'active', attempts: 2, x: 2 });
    acks.push({ id: j.id, lockToken: j.lockToken, result: { i: idx.get(j.id)! } });
  }
  const out = await t.store.complete(queue, WID, acks);
  if (out.some((o) => o !== 'completed')) throw new Error(`complete: ${out.join(',')}`);
  for (const a of acks) {
    const e = exp.get(a.id)!;
    e.events.push('completed');
    e.outcomes.push('completed');
    Object.assign(e, { status: 'completed', result: JSON.stringify(a.result) });
  }
  return logs;
}

/** Checks the mirror against the expectations: events per job in order, projection, executions, DLQ. */
async function checkMirror(
  db: TestDb,
  exp: Map<string, Expected>,
  totalLogs: number,
): Promise<void> {
  const ids = [...exp.keys()];
  const rows = await db.dataSource.query(
    `SELECT job_id::text, event FROM job_timeline ORDER BY job_id, stream_ms, stream_seq`,
  );
  const got = groupBy(rows as { job_id: string; event: string }[], (r) => r.job_id);
  const problems: string[] = [];
  for (const [id, e] of exp) {
    const evs = (got.get(id) ?? []).map((r) => r.event);
    if (evs.join(',') !== e.events.join(','))
      problems.push(`${id} events: ${evs.join(',')} expected ${e.events.join(',')}`);
  }
  if (got.size !== exp.size) problems.push(`${got.size} jobs have events, expected ${exp.size}`);
  const jobs = await db.dataSource.query(
    `SELECT id::text, queue, status, attempts, execution_seq, last_error, result FROM jobs WHERE id = ANY($1::uuid[])`,
    [ids],
  );
  if (jobs.length !== exp.size)
    problems.push(`${jobs.length} projection rows, expected ${exp.size}`);
  for (const j of jobs) {
    const e = exp.get(j.id)!;
    const have = [j.queue, j.status, j.attempts, j.execution_seq, j.last_error, j.result];
    const want = [e.queue, e.status, e.attempts, e.x, e.lastError, e.result];
    if (JSON.stringify(have) !== JSON.stringify(want))
      problems.push(`${j.id} projection ${JSON.stringify(have)} expected ${JSON.stringify(want)}`);
  }
  const ex = await db.dataSource.query(
    `SELECT job_id::text, execution_seq, outcome FROM job_executions ORDER BY job_id, execution_seq`,
  );
  const exBy = groupBy(
    ex as { job_id: string; execution_seq: number; outcome: string }[],
    (r) => r.job_id,
  );
  for (const [id, e] of exp) {
    const have = (exBy.get(id) ?? []).map((r) => `${r.execution_seq}:${r.outcome}`).join(',');
    const want = e.outcomes.map((o, i) => `${i + 1}:${o}`).join(',');
    if (have !== want) problems.push(`${id} executions ${have} expected ${want}`);
  }
  const dlq = await db.dataSource.query(
    `SELECT job_id::text FROM dead_letter_jobs ORDER BY job_id`,
  );
  const wantDlq = [...exp]
    .filter(([, e]) => e.status === 'failed')
    .map(([id]) => id)
    .sort();
  if (JSON.stringify(dlq.map((r: any) => r.job_id)) !== JSON.stringify(wantDlq))
    problems.push(`DLQ holds ${dlq.length} jobs, expected ${wantDlq.length}`);
  const [{ n }] = await db.dataSource.query(`SELECT count(*)::int AS n FROM job_logs`);
  if (n !== totalLogs) problems.push(`${n} job_logs rows, expected ${totalLogs}`);
  expect(problems.slice(0, 20)).toEqual([]);
}

describe('a ROLE=audit process killed (SIGKILL) mid-mirroring is replaced', () => {
  const QUEUES = ['crash-a', 'crash-b', 'crash-c'];
  const ROUNDS = 90; // × 20 jobs × 76 entries / 20 = 6,840 stream entries
  let server: RedisServer;
  let admin: Redis;
  let t: TestStore;
  let db: TestDb;
  const procs: SluiceProcess[] = [];

  beforeAll(async () => {
    server = await startRedisServer({ name: 'audit-crash' });
    admin = server.client();
    t = await openStore('audit-crash', server.url);
    db = await openTestDb('crash');
  });
  afterAll(async () => {
    await killAll(procs);
    admin?.disconnect();
    await t?.close().catch(() => undefined);
    await db?.close();
    await stopAllRedisServers();
    removeDir(server?.opts.dir);
  });

  const startWriter = async () => {
    const p = await startSluice({
      ROLE: 'audit',
      REDIS_URL: server.url,
      REDIS_PREFIX: t.prefix,
      DATABASE_URL: db.url,
    });
    procs.push(p);
    await p.waitFor(/"msg":"audit writer started"/);
    const line = p
      .output()
      .split('\n')
      .find((l) => l.includes('"msg":"audit writer started"'))!;
    return { p, writerId: JSON.parse(line).writerId as string };
  };

  /** Entries `consumer` holds unacked in the audit group, and how many of them are already committed in Postgres. */
  async function pendingOf(consumer: string): Promise<{ pending: number; committed: number }> {
    const ids: { q: string; ms: string; seq: string }[] = [];
    for (const q of QUEUES) {
      const r = (await admin
        .xpending(t.keys(q).events, MIRROR_GROUP, '-', '+', 100_000, consumer)
        .catch(() => [])) as [string, ...unknown[]][];
      for (const [id] of r) {
        const [ms, seq] = id.split('-');
        ids.push({ q, ms, seq });
      }
    }
    if (!ids.length) return { pending: 0, committed: 0 };
    const [{ n }] = await db.dataSource.query(
      `SELECT count(*)::int AS n FROM (SELECT queue, stream_ms, stream_seq FROM job_timeline UNION ALL SELECT queue, stream_ms, stream_seq FROM job_logs) x
       JOIN unnest($1::text[], $2::bigint[], $3::bigint[]) AS u(q, ms, seq) ON x.queue = u.q AND x.stream_ms = u.ms AND x.stream_seq = u.seq`,
      [ids.map((i) => i.q), ids.map((i) => i.ms), ids.map((i) => i.seq)],
    );
    return { pending: ids.length, committed: n };
  }

  test('no duplicate, no gap, streams drained, every projection final', async () => {
    const t0 = Date.now();
    const a = await startWriter();
    const exp = new Map<string, Expected>();
    let logs = 0;
    let produced = false;
    const producer = (async () => {
      for (let r = 0; r < ROUNDS; r++) {
        logs += await driveRound(t, QUEUES[r % QUEUES.length], 20, r, exp);
        await sleep(25);
      }
      produced = true;
    })();
    producer.catch(() => undefined);

    // Let the writer mirror a good part, then catch it between COMMIT and XACK.
    await waitUntil(
      'the writer mirrored 1,500 events',
      async () => {
        const [{ n }] = await db.dataSource.query(`SELECT count(*)::int AS n FROM job_timeline`);
        return n >= 1500;
      },
      30_000,
      20,
    );
    let caught: { pending: number; committed: number } | null = null;
    for (let attempt = 0; attempt < 60 && !caught; attempt++) {
      await admin.call('CLIENT', 'PAUSE', '4000', 'WRITE');
      await sleep(150);
      let p = await pendingOf(a.writerId);
      if (p.pending > 0 && p.committed < p.pending) {
        // A transaction still running: give it time to commit.
        await sleep(300);
        p = await pendingOf(a.writerId);
      }
      if (p.pending > 0 && p.committed === p.pending) {
        caught = p;
        a.p.kill('SIGKILL');
        await a.p.exited;
      }
      await admin.call('CLIENT', 'UNPAUSE');
      if (!caught) await sleep(10 + Math.floor(Math.random() * 40));
    }
    const [{ n: mirroredAtKill }] = await db.dataSource.query(
      `SELECT count(*)::int AS n FROM job_timeline`,
    );
    if (!caught) {
      // Never seen between COMMIT and XACK: kill it anyway (still a mid-mirroring crash).
      a.p.kill('SIGKILL');
      await a.p.exited;
    }
    console.log(
      `writer killed after ${mirroredAtKill} events mirrored; committed but unacked at the kill: ${JSON.stringify(caught)}`,
    );
    expect(caught).not.toBeNull();
    expect(caught!.pending).toBeGreaterThan(0);

    const b = await startWriter();
    await producer;
    expect(produced).toBe(true);
    const total = [...exp.values()].reduce((s, e) => s + e.events.length, 0);
    await waitUntil(
      'the second writer to drain every stream',
      async () => {
        const o = await outbox(t.redis, t, QUEUES);
        return o.len === 0 && o.pending === 0;
      },
      60_000,
      100,
    ).catch(async (e: Error) => {
      const [{ n }] = await db.dataSource.query(`SELECT count(*)::int AS n FROM job_timeline`);
      const o = await outbox(t.redis, t, QUEUES);
      throw new Error(
        `${e.message}: ${o.len} entries in the streams, ${o.pending} pending, ${n} of ${total} job_events rows; ` +
          `second writer's log: ${b.p.output().slice(-1500)}`,
      );
    });

    // Nothing was lost on the way: the scripts emitted what the test expects.
    let added = 0;
    for (const q of QUEUES) added += await entriesAdded(t.redis, t.keys(q).events);
    expect(added).toBe(total + logs);
    expect(mirroredAtKill).toBeLessThan(total);
    // Exactly one row per stream entry: count, uniqueness, and per-job sequences.
    const [{ n, d }] = await db.dataSource.query(
      `SELECT count(*)::int AS n, count(DISTINCT (queue, stream_ms, stream_seq))::int AS d FROM job_timeline`,
    );
    expect([n, d]).toEqual([total, total]);
    await checkMirror(db, exp, logs);
    // The second writer took the dead one's pending entries over (and logged it).
    expect(b.p.output()).toMatch(/"msg":"audit writer took over pending entries"/);
    expect(b.p.proc.exitCode).toBeNull();
    b.p.kill('SIGTERM');
    expect((await b.p.exited).code).toBe(0);
    console.log(
      `${exp.size} jobs, ${total} events + ${logs} log lines mirrored exactly once in ${Date.now() - t0} ms`,
    );
  });
});

describe('in process: a writer dying around its transaction is replaced', () => {
  const Q = 'cx';
  let t: TestStore;
  let db: TestDb;

  beforeEach(async () => {
    t = await openStore('audit-crash-unit');
    db = await openTestDb('crashunit');
  });
  afterEach(async () => {
    await t.close();
    await db.close();
  });

  async function produce(
    rounds: number,
  ): Promise<{ exp: Map<string, Expected>; logs: number; total: number }> {
    const exp = new Map<string, Expected>();
    let logs = 0;
    for (let r = 0; r < rounds; r++) logs += await driveRound(t, Q, 20, r, exp);
    const total = [...exp.values()].reduce((s, e) => s + e.events.length, 0);
    expect(await t.redis.xlen(t.keys(Q).events)).toBe(total + logs);
    return { exp, logs, total };
  }

  const writer = (id: string, db0 = db.dataSource) =>
    new MirrorWriter(t.stores, db0, { writerId: id, lockTtlMs: 300, batchSize: 100 });

  /** Runs w until it has nothing left to write. */
  async function drain(w: MirrorWriter): Promise<void> {
    await (w as any).refreshOwnership();
    while ((await w.runOnce()) > 0);
  }

  async function expectExact(
    exp: Map<string, Expected>,
    logs: number,
    total: number,
  ): Promise<void> {
    expect(await outbox(t.redis, t, [Q])).toEqual({ len: 0, pending: 0 });
    const [{ n, d }] = await db.dataSource.query(
      `SELECT count(*)::int AS n, count(DISTINCT (queue, stream_ms, stream_seq))::int AS d FROM job_timeline`,
    );
    expect([n, d]).toEqual([total, total]);
    await checkMirror(db, exp, logs);
  }

  test('died after COMMIT, before XACK: the replacement re-writes the batch, nothing twice', async () => {
    const { exp, logs, total } = await produce(5);
    const entries = await captureStreams(t.redis, t, [Q]);
    const w1 = writer('w1');
    await (w1 as any).refreshOwnership();
    (w1 as any).acknowledge = async () => {
      throw new Error('killed before XACK');
    };
    await expect(w1.runOnce()).rejects.toThrow('killed before XACK');
    // Its batch is committed and still pending in the group.
    const [{ n: committed }] = await db.dataSource.query(
      `SELECT (SELECT count(*) FROM job_timeline) + (SELECT count(*) FROM job_logs) AS n`,
    );
    expect(Number(committed)).toBe(100);
    expect((await outbox(t.redis, t, [Q])).pending).toBe(100);
    // w1 is gone (never stopped: its ownership lease just runs out).
    await sleep(350);
    const w2 = writer('w2');
    await drain(w2);
    expect(w2.stats.events).toBe(total + logs);
    await expectExact(exp, logs, total);
    // Field for field, each entry once, in stream order per job.
    const rows = await eventRows(db.dataSource);
    const want = groupBy(
      entries.filter((e) => e.fields.e !== 'log').map(expectedEventRow),
      (r) => r.job_id,
    );
    for (const [id, list] of groupBy(rows, (r) => r.job_id)) expect(list).toEqual(want.get(id));
    await w2.stop();
  });

  test('died before COMMIT (its transaction failed): the replacement writes every entry, no gap', async () => {
    const { exp, logs, total } = await produce(5);
    // w1 writes into a database without the schema: its transaction fails in Postgres.
    const badUrl = freshDatabaseUrl('crashbad');
    await ensureDatabase(badUrl);
    const bad = createDataSource(badUrl, 1);
    await bad.initialize();
    try {
      const w1 = writer('w1', bad);
      await (w1 as any).refreshOwnership();
      await expect(w1.runOnce()).rejects.toThrow(/job_events/);
      await expect(w1.runOnce()).rejects.toThrow(/job_events/);
    } finally {
      await bad.destroy();
      await dropDatabase(badUrl);
    }
    // Nothing of it reached Postgres, nothing was acked: it all waits in Redis.
    const [{ n }] = await db.dataSource.query(`SELECT count(*)::int AS n FROM job_timeline`);
    expect(n).toBe(0);
    expect(await outbox(t.redis, t, [Q])).toEqual({ len: total + logs, pending: 100 });
    await sleep(350);
    const w2 = writer('w2');
    await drain(w2);
    await expectExact(exp, logs, total);
    await w2.stop();
  });
});
