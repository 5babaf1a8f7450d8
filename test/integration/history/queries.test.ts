/**
 * The history services (src/history) on real Redis and real,
 * freshly migrated PostgreSQL databases. No mocks.
 *
 * 1. Over the engine: jobs driven through the Lua scripts (complete with
 *    progress and logs, fail into the DLQ, cancel waiting, cancel requested
 *    while active, delayed, waiting), mirrored by a real MirrorWriter; then
 *    getJob (Redis while live, Postgres after pruning, ids not mirrored yet),
 *    events / executions / logs in the API shapes, the DLQ, counts,
 *    throughput and audit lag. Every job read from Postgres equals the job
 *    Redis returned before the mirror ran (the mapping loses nothing).
 * 2. listJobs: every filter combination against an expectation computed in
 *    JS, across small pages; validation errors.
 * 3. Keyset pagination over 100,000 jobs while inserts continue (a background
 *    inserter plus inserts between page fetches, new ids and ids back-dated
 *    into the range being paged): every id present before the first page
 *    appears exactly once, in strictly descending order.
 * 4. DLQ pagination over many equal failed_at values (µs precision kept).
 * 5. The trigger-kept counters equal COUNT(*) after concurrent writers,
 *    rollbacks and retention pruning, and are seeded by the migration from
 *    the rows already there.
 */
import { errorFingerprint } from '../../../src/core/error-fingerprint';
import { randomBytes } from 'node:crypto';
import { v7 as uuidv7 } from 'uuid';
import { DataSource } from 'typeorm';
import { MirrorWriter } from '../../../src/mirror/mirror-writer';
import { createDataSource, ensureDatabase, MIGRATIONS } from '../../../src/postgres/data-source';
import { HistoryQueries } from '../../../src/history';
import { THROUGHPUT_SQL } from '../../../src/history/throughput';
import { pruneHistory } from '../../../src/maintenance/retention';
import { ValidationError } from '../../../src/core/errors';
import type { Job } from '../../../src/core/job';
import { EnqueueInput, normalizeEnqueue } from '../../../src/core/job-options';
import { dropDatabase, freshDatabaseUrl, openTestDb, TestDb, v7At } from '../../support/postgres';
import { openStore, sleep, TestStore } from '../../support/redis';

jest.setTimeout(180_000);

const W = 'worker-q';
let t: TestStore;
let db: TestDb;
let bulk: TestDb;
let h: HistoryQueries;
let hb: HistoryQueries;

beforeAll(async () => {
  t = await openStore('queries');
  db = await openTestDb('queries');
  bulk = await openTestDb('queries_bulk');
  h = new HistoryQueries(db.dataSource, t.stores);
  hb = new HistoryQueries(bulk.dataSource, t.stores);
});
afterAll(async () => {
  await t?.close();
  await db?.close();
  await bulk?.close();
});

async function enq(input: EnqueueInput): Promise<string> {
  const [r] = await t.store.enqueue([normalizeEnqueue(input, 1_000_000)]);
  return r.id;
}

async function claim(queue: string, id: string) {
  const c = await t.store.claim(queue, 1, 60_000, W);
  expect(c.jobs.map((j) => j.id)).toEqual([id]);
  return c.jobs[0];
}

/** Steps a real writer until every stream is mirrored. */
async function mirror(): Promise<number> {
  const w = new MirrorWriter(t.stores, db.dataSource, { writerId: `aw-q-${randomBytes(3).toString('hex')}` });
  await (w as any).refreshOwnership();
  let total = 0;
  for (let n = await w.runOnce(); n > 0; n = await w.runOnce()) total += n;
  await w.stop();
  return total;
}

interface Row {
  id: string;
  queue: string;
  type: string;
  status: string;
  ms: number;
}

/** Inserts projection rows directly (one multi-row statement). Terminal rows get finished_at = created_at. */
async function insertJobs(ds: { query(sql: string, params?: unknown[]): Promise<unknown> }, rows: Row[]): Promise<void> {
  if (!rows.length) return;
  await ds.query(
    `INSERT INTO jobs (id, queue, type, status, priority, attempts, max_attempts, backoff, timeout_ms, payload, execution_seq,
                       created_at, run_at, finished_at, updated_at, last_event_ms, last_event_seq)
     SELECT id, q, ty, s, 0, 0, 3, 'exponential|2000|3600000|equal', 600000, '{"k":1}', 0, to_timestamp(ms / 1000.0), to_timestamp(ms / 1000.0),
            CASE WHEN s IN ('completed', 'failed', 'cancelled') THEN to_timestamp(ms / 1000.0) END, to_timestamp(ms / 1000.0), ms::bigint, 0
     FROM unnest($1::uuid[], $2::text[], $3::text[], $4::text[], $5::float8[]) AS u(id, q, ty, s, ms)`,
    [rows.map((r) => r.id), rows.map((r) => r.queue), rows.map((r) => r.type), rows.map((r) => r.status), rows.map((r) => r.ms)],
  );
}

const pick = <T>(xs: readonly T[]): T => xs[Math.floor(Math.random() * xs.length)];
const STATUSES = ['waiting', 'delayed', 'active', 'completed', 'failed', 'cancelled'] as const;

async function expectValidation(p: Promise<unknown>, path: string): Promise<void> {
  const e = await p.then(() => null, (err) => err);
  expect(e).toBeInstanceOf(ValidationError);
  expect((e as ValidationError).details.map((d) => d.path)).toEqual([path]);
}

/** A job as Redis returned it, as the history reads it back: plus its flow columns (null: none of these jobs is a flow's; Redis's own values win once it has them). */
const fromPg = (j: Job | undefined) => ({ flowId: null, flowRef: null, ...j });

describe('over the engine and the audit writer', () => {
  const ids: Record<string, string> = {};
  let before: Map<string, Job>;
  let dToken: string;

  beforeAll(async () => {
    // A: completed with progress and a log line.
    ids.A = await enq({ queue: 'qa', type: 't.ok', payload: { n: 1, s: 'é\ud800' } });
    const a = await claim('qa', ids.A);
    await t.store.progress('qa', ids.A, a.lockToken, W, 50, [{ level: 'info', message: 'hello' }, { level: 'warn', message: 'careful' }]);
    await t.store.complete('qa', W, [{ id: ids.A, lockToken: a.lockToken, result: { ok: true } }]);
    // B: unrecoverable failure: the DLQ.
    ids.B = await enq({ queue: 'qa', type: 't.bad', payload: { n: 2 }, maxAttempts: 1 });
    const b = await claim('qa', ids.B);
    expect(await t.store.fail('qa', ids.B, b.lockToken, { error: 'Error: boom', retryable: false, delayMs: 0, reason: 'error', workerId: W })).toBe('failed');
    // C: cancelled while waiting.
    ids.C = await enq({ queue: 'qa', type: 't.ok', payload: { n: 3 } });
    await t.store.cancel('qa', ids.C);
    // D: active with a cancel request; E: delayed; F: waiting.
    ids.D = await enq({ queue: 'qb', type: 't.ok', payload: { n: 4 }, priority: 5 });
    dToken = (await claim('qb', ids.D)).lockToken;
    await t.store.cancel('qb', ids.D);
    ids.E = await enq({ queue: 'qb', type: 't.ok', payload: { n: 5 }, delayMs: 60_000 });
    ids.F = await enq({ queue: 'qb', type: 't.other', payload: { n: 6 }, idempotencyKey: 'k-1' });
    before = new Map();
    for (const [k, id] of Object.entries(ids)) {
      const j = await t.store.getJob(k < 'D' ? 'qa' : 'qb', id);
      expect(j).not.toBeNull();
      before.set(id, j as Job);
    }
    expect(await mirror()).toBeGreaterThan(10);
  });

  test('every mirrored job read from Postgres equals what Redis returned', async () => {
    const { items } = await h.listJobs({ limit: 500 });
    expect(items.map((j) => j.id).sort()).toEqual(Object.values(ids).sort());
    for (const j of items) expect(j).toEqual(fromPg(before.get(j.id)));
    expect(items.find((j) => j.id === ids.D)!.cancelRequested).toBe(true);
  });

  test('getJob: Redis while live, Postgres once pruned, Redis for ids not mirrored yet, null otherwise', async () => {
    // A and C were forgotten by Redis once mirrored (completed/cancelled).
    expect(await t.store.getJob('qa', ids.A)).toBeNull();
    const a = await h.getJob(ids.A);
    expect(a).toEqual(fromPg(before.get(ids.A)));
    expect(a).toMatchObject({ status: 'completed', result: { ok: true }, progress: 50, attempts: 1, workerId: W, executionSeq: 1 });
    expect(a!.payload).toEqual({ n: 1, s: 'é\ud800' });
    expect(await h.getJob(ids.C)).toMatchObject({ status: 'cancelled', attempts: 0 });
    // Live: Redis's fresh state wins (progress written after the mirror shows up).
    const d = before.get(ids.D)!;
    await t.store.progress('qb', ids.D, dToken, W, 77, []);
    const live = await h.getJob(ids.D);
    expect(live).toMatchObject({ id: ids.D, status: 'active', cancelRequested: true, queue: 'qb', progress: 77 });
    expect(live!.updatedAt).toBeGreaterThanOrEqual(d.updatedAt);
    expect(await h.getJob(ids.F)).toEqual(before.get(ids.F));
    // Not mirrored yet: found through the queue registry.
    const g = await enq({ queue: 'qc', type: 't.ok', payload: { n: 7 } });
    expect((await db.dataSource.query(`SELECT 1 FROM jobs WHERE id = $1`, [g])).length).toBe(0);
    expect(await h.getJob(g)).toMatchObject({ id: g, queue: 'qc', status: 'waiting', payload: { n: 7 } });
    expect(await h.getJob(g.toUpperCase())).toMatchObject({ id: g });
    expect(await h.getJob(uuidv7())).toBeNull();
    expect(await h.getJob('not-a-uuid')).toBeNull();
    expect(await h.getJob("'; DROP TABLE jobs; --")).toBeNull();
    await mirror();
  });

  test('jobEvents: the API shape, oldest first, data parsed', async () => {
    const { items } = await h.jobEvents(ids.A);
    expect(items.map((e) => e.event)).toEqual(['enqueued', 'claimed', 'progress', 'completed']);
    for (const e of items) expect(Object.keys(e)).toEqual(['seq', 'at', 'event', 'from', 'to', 'attempt', 'workerId', 'reason', 'error', 'data']);
    expect(items[0]).toMatchObject({ from: null, to: 'waiting', attempt: 0, workerId: null, data: { n: 1, s: 'é\ud800' } });
    expect(items[1]).toMatchObject({ from: 'waiting', to: 'active', attempt: 1, workerId: W, data: null });
    expect(items[2]).toMatchObject({ event: 'progress', data: 50 });
    expect(items[3]).toMatchObject({ from: 'active', to: 'completed', attempt: 1, workerId: W, data: { ok: true } });
    expect(items.map((e) => e.seq)).toEqual([1, 2, 3, 4]);
    for (let i = 1; i < items.length; i++) {
      expect(items[i].at).toBeGreaterThanOrEqual(items[i - 1].at);
    }
    expect(items[3].at).toBe(before.get(ids.A)!.finishedAt);
    const b = (await h.jobEvents(ids.B)).items;
    expect(b[b.length - 1]).toMatchObject({ event: 'failed', from: 'active', to: 'failed', error: 'Error: boom' });
    expect((await h.jobEvents(ids.D)).items.map((e) => e.event)).toEqual(['enqueued', 'claimed', 'cancel_requested', 'progress']);
    expect(await h.jobEvents(uuidv7())).toEqual({ items: [] });
    expect(await h.jobEvents('nope')).toEqual({ items: [] });
  });

  test('jobExecutions and jobLogs: the API shapes', async () => {
    const { items } = await h.jobExecutions(ids.A);
    expect(items).toHaveLength(1);
    expect(Object.keys(items[0])).toEqual(['executionSeq', 'attempt', 'workerId', 'startedAt', 'finishedAt', 'outcome', 'error', 'durationMs']);
    const a = before.get(ids.A)!;
    expect(items[0]).toEqual({ executionSeq: 1, attempt: 1, workerId: W, startedAt: a.startedAt, finishedAt: a.finishedAt, outcome: 'completed', error: null, durationMs: (a.finishedAt as number) - (a.startedAt as number) });
    expect((await h.jobExecutions(ids.B)).items[0]).toMatchObject({ outcome: 'failed', error: 'Error: boom' });
    expect((await h.jobExecutions(ids.D)).items[0]).toMatchObject({ outcome: 'running', finishedAt: null, durationMs: null });
    expect(await h.jobExecutions(ids.F)).toEqual({ items: [] });
    const logs = (await h.jobLogs(ids.A)).items;
    expect(logs.map(({ attempt, level, message }) => ({ attempt, level, message }))).toEqual([
      { attempt: 1, level: 'info', message: 'hello' },
      { attempt: 1, level: 'warn', message: 'careful' },
    ]);
    for (const l of logs) expect(Object.keys(l)).toEqual(['at', 'attempt', 'level', 'message']);
    expect(await h.jobLogs(ids.B)).toEqual({ items: [] });
  });

  test('listDlq: failed jobs with lastError, filters', async () => {
    const all = await h.listDlq();
    expect(all.nextCursor).toBeNull();
    expect(all.items).toHaveLength(1);
    // The DLQ copy also carries the fingerprint the mirror writer stored when the job failed.
    expect(all.items[0]).toEqual({ ...fromPg(before.get(ids.B)), fingerprint: errorFingerprint('Error: boom') });
    expect(all.items[0]).toMatchObject({ status: 'failed', lastError: 'Error: boom', payload: { n: 2 } });
    expect((await h.listDlq({ queue: 'qa', type: 't.bad' })).items.map((j) => j.id)).toEqual([ids.B]);
    expect((await h.listDlq({ queue: 'qb' })).items).toEqual([]);
    expect((await h.listDlq({ type: 't.ok' })).items).toEqual([]);
  });

  test('queueCounts: live from Redis, terminal from Postgres; throughput; audit lag', async () => {
    const counts = await h.queueCounts();
    expect(counts).toEqual({
      qa: { waiting: 0, delayed: 0, active: 0, completed: 1, failed: 1, cancelled: 1 },
      qb: { waiting: 1, delayed: 1, active: 1, completed: 0, failed: 0, cancelled: 0 },
      qc: { waiting: 1, delayed: 0, active: 0, completed: 0, failed: 0, cancelled: 0 },
    });
    expect(await h.queueCounts(['qa', 'nothing'])).toEqual({
      qa: counts.qa,
      nothing: { waiting: 0, delayed: 0, active: 0, completed: 0, failed: 0, cancelled: 0 },
    });
    expect(await h.throughput()).toEqual({ completedPerMin: 1, failedPerMin: 1 });
    expect(await h.mirrorLag()).toEqual({ lagMs: 0, pending: 0 });
    await enq({ queue: 'qc', type: 't.ok' });
    await sleep(60);
    const lag = await h.mirrorLag();
    expect(lag.pending).toBe(1);
    expect(lag.lagMs).toBeGreaterThanOrEqual(50);
    await mirror();
    expect((await h.queueCounts(['qc'])).qc.waiting).toBe(2);
    expect(await h.mirrorLag()).toEqual({ lagMs: 0, pending: 0 });
  });
});

describe('listJobs: filters and validation', () => {
  const rows: Row[] = [];

  beforeAll(async () => {
    const t0 = Date.now() - 3_600_000;
    for (let i = 0; i < 3000; i++) {
      rows.push({ id: v7At(t0 + i * 7), queue: pick(['f1', 'f2', 'f3']), type: pick(['ft.a', 'ft.b', 'ft.c', 'ft.d']), status: pick(STATUSES), ms: t0 + i * 7 });
    }
    await insertJobs(bulk.dataSource, rows);
  });

  test('every filter combination returns exactly the matching jobs, newest first, across pages', async () => {
    const combos: { queue?: string; status?: string; type?: string }[] = [];
    for (const queue of [undefined, 'f2'])
      for (const status of [undefined, 'completed'])
        for (const type of [undefined, 'ft.c']) combos.push({ queue, status, type });
    for (const f of combos) {
      const want = rows
        .filter((r) => (!f.queue || r.queue === f.queue) && (!f.status || r.status === f.status) && (!f.type || r.type === f.type))
        .map((r) => r.id)
        .sort()
        .reverse();
      const got: string[] = [];
      let cursor: string | undefined;
      let pages = 0;
      do {
        const page = await hb.listJobs({ ...f, cursor, limit: 37 });
        expect(page.items.length).toBeLessThanOrEqual(37);
        if (page.nextCursor) expect(page.items).toHaveLength(37);
        for (const j of page.items) {
          if (f.queue) expect(j.queue).toBe(f.queue);
          if (f.status) expect(j.status).toBe(f.status);
          if (f.type) expect(j.type).toBe(f.type);
        }
        got.push(...page.items.map((j) => j.id));
        cursor = page.nextCursor ?? undefined;
        pages++;
      } while (cursor);
      expect({ f, ids: got }).toEqual({ f, ids: want });
      expect(pages).toBe(Math.max(1, Math.ceil(want.length / 37)));
    }
    expect(await hb.listJobs({ queue: 'f1', type: 'nope' })).toEqual({ items: [], nextCursor: null });
    const first = await hb.listJobs({ queue: 'f3' });
    expect(first.items).toHaveLength(50);
  });

  test('bad limit, status and cursor are validation errors', async () => {
    for (const limit of [0, 501, 1.5, -1, NaN]) await expectValidation(hb.listJobs({ limit }), 'limit');
    await expectValidation(hb.listJobs({ status: 'done' }), 'status');
    for (const cursor of ['x', 'AAAA', '!!!!!!!!!!!!!!!!!!!!!!', 'a'.repeat(23)]) await expectValidation(hb.listJobs({ cursor }), 'cursor');
    for (const cursor of ['x', Buffer.from('2026-01-01|nope').toString('base64url')]) await expectValidation(hb.listDlq({ cursor }), 'cursor');
    await expectValidation(hb.listDlq({ limit: 1000 }), 'limit');
    expect((await hb.listJobs({ limit: 500 })).items).toHaveLength(500);
    expect((await hb.listJobs({ limit: 1 })).items).toHaveLength(1);
  });
});

describe('keyset pagination while inserts continue', () => {
  const N = 100_000;
  const STEP = 500;
  let base: number;

  beforeAll(async () => {
    base = Date.now() - 2 * 86_400_000;
    const t0 = Date.now();
    // 100,000 rows in one statement; UUIDv7-like ids built from the row's timestamp (one job every 500 ms).
    await bulk.dataSource.query(
      `INSERT INTO jobs (id, queue, type, status, priority, attempts, max_attempts, backoff, timeout_ms, payload, execution_seq,
                         created_at, run_at, finished_at, updated_at, last_event_ms, last_event_seq)
       SELECT (lpad(to_hex(ms), 12, '0') || '7' || lpad(to_hex(i % 4096), 3, '0') || '8' || lpad(to_hex(i), 15, '0'))::uuid,
              'p' || (i % 3), 'pt.' || (i % 5), s, 0, 1, 3, 'exponential|2000|3600000|equal', 600000, '{"i":' || i || '}', 1,
              to_timestamp(ms / 1000.0), to_timestamp(ms / 1000.0),
              CASE WHEN s IN ('completed', 'failed', 'cancelled') THEN to_timestamp(ms / 1000.0) END, to_timestamp(ms / 1000.0), ms, 0
       FROM (SELECT i, $1::bigint + i::bigint * ${STEP} AS ms,
                    (ARRAY['completed','completed','completed','completed','failed','cancelled','waiting','active'])[i % 8 + 1] AS s
             FROM generate_series(1, ${N}) i) g`,
      [base],
    );
    console.log(`inserted ${N} jobs in ${Date.now() - t0} ms`);
  });

  /** Rows to insert while paging: half brand-new ids, half back-dated into the range being paged (hosts with skewed clocks, late writers). */
  function concurrentRows(n: number, queue?: string, status?: string): Row[] {
    return Array.from({ length: n }, (_, i) => {
      const ms = i % 2 ? Date.now() : base + Math.floor(Math.random() * N * STEP);
      return { id: i % 2 ? uuidv7() : v7At(ms), queue: queue ?? pick(['p0', 'p1', 'p2']), type: 'pt.x', status: status ?? pick(STATUSES), ms };
    });
  }

  async function paginate(filter: { queue?: string; status?: string }, limit: number, insertQueue?: string, insertStatus?: string) {
    const ds = bulk.dataSource;
    const where = [filter.queue && `queue = '${filter.queue}'`, filter.status && `status = '${filter.status}'`].filter(Boolean).join(' AND ');
    const present: string[] = (await ds.query(`SELECT id::text FROM jobs ${where ? `WHERE ${where}` : ''}`)).map((r: { id: string }) => r.id);
    let stop = false;
    let bgBatches = 0;
    let inserted = 0;
    const background = (async () => {
      while (!stop) {
        await insertJobs(ds, concurrentRows(100, insertQueue, insertStatus));
        // Status changes too, only in a queue no filtered run reads (a status filter may legitimately gain or lose a changed job).
        await ds.query(
          `UPDATE jobs SET status = (ARRAY['completed','failed','cancelled','active'])[1 + floor(random() * 4)::int], updated_at = now()
           WHERE id IN (SELECT id FROM jobs WHERE queue = 'p0' AND id < $1::uuid ORDER BY id DESC LIMIT 50)`,
          [v7At(base + Math.floor(Math.random() * N * STEP))],
        );
        bgBatches++;
        inserted += 100;
      }
    })();
    const seen = new Map<string, number>();
    const order: string[] = [];
    let cursor: string | undefined;
    let pages = 0;
    try {
      do {
        const page = await hb.listJobs({ ...filter, cursor, limit });
        for (const j of page.items) {
          seen.set(j.id, (seen.get(j.id) ?? 0) + 1);
          order.push(j.id);
        }
        cursor = page.nextCursor ?? undefined;
        pages++;
        await insertJobs(ds, concurrentRows(20, insertQueue, insertStatus)); // and between page fetches
        inserted += 20;
      } while (cursor);
    } finally {
      stop = true;
      await background;
    }
    const dupes = [...seen].filter(([, n]) => n > 1);
    const missing = present.filter((id) => !seen.has(id));
    const unordered = order.filter((id, i) => i > 0 && !(order[i - 1] > id));
    return { present, seen, dupes, missing, unordered, pages, bgBatches, inserted };
  }

  test('all jobs, pages of 500: every id present before the first page appears exactly once, newest first', async () => {
    const r = await paginate({}, 500);
    console.log(`paged ${r.seen.size} jobs in ${r.pages} pages while ${r.inserted} were inserted (${r.bgBatches} background batches)`);
    expect(r.present.length).toBeGreaterThanOrEqual(N);
    expect({ dupes: r.dupes.slice(0, 5), count: r.dupes.length }).toEqual({ dupes: [], count: 0 });
    expect({ missing: r.missing.slice(0, 5), count: r.missing.length }).toEqual({ missing: [], count: 0 });
    expect(r.unordered.slice(0, 5)).toEqual([]);
    expect(r.pages).toBeGreaterThanOrEqual(Math.ceil(r.present.length / 500));
    expect(r.bgBatches).toBeGreaterThan(3);
  });

  test('filtered (queue + status), pages of 100, with matching rows inserted meanwhile', async () => {
    const r = await paginate({ queue: 'p1', status: 'completed' }, 100, 'p1', 'completed');
    expect(r.present.length).toBeGreaterThan(10_000);
    expect({ dupes: r.dupes.slice(0, 5), count: r.dupes.length }).toEqual({ dupes: [], count: 0 });
    expect({ missing: r.missing.slice(0, 5), count: r.missing.length }).toEqual({ missing: [], count: 0 });
    expect(r.unordered.slice(0, 5)).toEqual([]);
    expect(r.bgBatches).toBeGreaterThan(3);
  });
});

describe('listDlq pagination', () => {
  test('many jobs failing at the same µs instant: each appears once, (failed_at, job_id) descending', async () => {
    const ds = bulk.dataSource;
    const stamps = Array.from({ length: 10 }, (_, k) => `2026-01-0${1 + (k % 5)} 10:00:0${k}.123456+00`);
    const ids = Array.from({ length: 1000 }, () => uuidv7());
    await ds.query(
      `INSERT INTO dead_letter_jobs (job_id, queue, type, payload, last_error, attempts, failed_at)
       SELECT id, 'dq' || (n % 2), 'dt.' || (n % 3), '{"n":' || n || '}', 'Error: ' || n, 3, ts
       FROM unnest($1::uuid[], $2::timestamptz[]) WITH ORDINALITY AS u(id, ts, n)`,
      [ids, ids.map((_, i) => stamps[i % 10])],
    );
    for (const f of [{}, { queue: 'dq1' }, { type: 'dt.2' }, { queue: 'dq0', type: 'dt.1' }] as { queue?: string; type?: string }[]) {
      const where = [f.queue && `queue = '${f.queue}'`, f.type && `type = '${f.type}'`].filter(Boolean);
      const want: string[] = (await ds.query(`SELECT job_id::text FROM dead_letter_jobs ${where.length ? `WHERE ${where.join(' AND ')}` : ''} ORDER BY failed_at DESC, job_id DESC`)).map((r: any) => r.job_id);
      const got: Job[] = [];
      let cursor: string | undefined;
      do {
        const page = await hb.listDlq({ ...f, cursor, limit: 7 });
        got.push(...page.items);
        cursor = page.nextCursor ?? undefined;
      } while (cursor);
      expect(got.map((j) => j.id)).toEqual(want);
    }
    const [first] = (await hb.listDlq({ queue: 'dq0', limit: 1 })).items;
    // No jobs row for these: the DLQ copy stands alone.
    expect(first).toMatchObject({ queue: 'dq0', status: 'failed', attempts: 3, createdAt: Date.parse('2026-01-05T10:00:09.123Z') });
    expect(first.lastError).toMatch(/^Error: \d+$/);
    expect(first.payload).toEqual({ n: expect.any(Number) });
  });
});

describe('counters', () => {
  const exact = async (ds: DataSource) => {
    const [a, b, c, d] = await Promise.all([
      ds.query(`SELECT queue, status, n::int FROM job_counts WHERE n <> 0 ORDER BY 1, 2`),
      ds.query(`SELECT queue, status, count(*)::int AS n FROM jobs GROUP BY 1, 2 ORDER BY 1, 2`),
      ds.query(`SELECT queue, n::int FROM dead_letter_counts WHERE n <> 0 ORDER BY 1`),
      ds.query(`SELECT queue, count(*)::int AS n FROM dead_letter_jobs GROUP BY 1 ORDER BY 1`),
    ]);
    return { jobs: [a, b], dlq: [c, d] };
  };

  test('equal COUNT(*) after concurrent writers (one per queue), rollbacks and retention pruning', async () => {
    const ds = bulk.dataSource;
    let s = await exact(ds);
    expect(s.jobs[0]).toEqual(s.jobs[1]);
    expect(s.dlq[0]).toEqual(s.dlq[1]);
    const t0 = Date.now() - 3 * 86_400_000;
    let stop = false;
    let pruned = 0;
    const writer = async (queue: string) => {
      for (let i = 0; i < 25; i++) {
        const qr = ds.createQueryRunner();
        await qr.connect();
        try {
          await qr.startTransaction();
          // Like the mirror writer: new jobs, then status changes, then the DLQ follows the projection.
          const fresh = Array.from({ length: 30 }, (_, k) => ({ id: v7At(t0 + i * 1000 + k), queue, type: 'ct', status: pick(['waiting', 'delayed']), ms: t0 + i * 1000 + k }));
          await insertJobs(qr, fresh);
          const changed: { id: string }[] = await qr.query(
            `UPDATE jobs SET status = (ARRAY['active','completed','failed','cancelled','waiting'])[1 + floor(random() * 5)::int],
                             finished_at = created_at
             WHERE id IN (SELECT id FROM jobs WHERE queue = $1 AND id < $2::uuid ORDER BY id DESC LIMIT 40) RETURNING id`,
            [queue, v7At(Date.now() - Math.floor(Math.random() * 3 * 86_400_000))],
          );
          const changedIds = changed.map((r) => r.id);
          await qr.query(`DELETE FROM dead_letter_jobs d USING jobs j WHERE d.job_id = j.id AND j.id = ANY($1::uuid[]) AND j.status <> 'failed'`, [changedIds]);
          await qr.query(
            `INSERT INTO dead_letter_jobs (job_id, queue, type, payload, last_error, attempts, failed_at)
             SELECT id, queue, type, payload, 'x', attempts, now() FROM jobs WHERE id = ANY($1::uuid[]) AND status = 'failed'
             ON CONFLICT (job_id) DO UPDATE SET failed_at = EXCLUDED.failed_at`,
            [changedIds],
          );
          if (i % 5 === 4) await qr.rollbackTransaction();
          else await qr.commitTransaction();
        } finally {
          await qr.release();
        }
      }
    };
    const pruner = (async () => {
      while (!stop) {
        pruned += await pruneHistory(ds, 1, 200, 1);
        await sleep(5);
      }
    })();
    try {
      await Promise.all(['p0', 'p1', 'p2'].map(writer));
    } finally {
      stop = true;
      await pruner;
    }
    expect(pruned).toBeGreaterThan(0);
    s = await exact(ds);
    expect(s.jobs[0]).toEqual(s.jobs[1]);
    expect(s.dlq[0]).toEqual(s.dlq[1]);
    // queueCounts reads them (these queues have nothing in Redis).
    const counts = await hb.queueCounts(['p0', 'p1']);
    for (const q of ['p0', 'p1']) {
      const n = (st: string) => (s.jobs[1] as any[]).find((r) => r.queue === q && r.status === st)?.n ?? 0;
      expect(counts[q]).toEqual({ waiting: 0, delayed: 0, active: 0, completed: n('completed'), cancelled: n('cancelled'), failed: (s.dlq[1] as any[]).find((r) => r.queue === q)?.n ?? 0 });
    }
    // TRUNCATE empties them too.
    await ds.query(`TRUNCATE dead_letter_jobs`);
    expect((await exact(ds)).dlq).toEqual([[], []]);
  });

  test('job_finishes equals the completed and failed jobs per second and queue, after inserts, status changes back and forth, rollbacks', async () => {
    const ds = bulk.dataSource;
    const finished = async () => {
      const [a, b] = await Promise.all([
        ds.query(`SELECT queue, bucket, completed, failed FROM job_finishes WHERE queue LIKE 'fin%' AND (completed <> 0 OR failed <> 0) ORDER BY 1, 2`),
        ds.query(`SELECT queue, date_trunc('second', finished_at) AS bucket, count(*) FILTER (WHERE status = 'completed')::int AS completed,
                         count(*) FILTER (WHERE status = 'failed')::int AS failed
                  FROM jobs WHERE queue LIKE 'fin%' AND status IN ('completed', 'failed') GROUP BY 1, 2 ORDER BY 1, 2`),
      ]);
      return [a, b];
    };
    const now = Date.now();
    // Inserted already finished (a job enqueued and ended within one batch), or live.
    await insertJobs(ds, Array.from({ length: 300 }, (_, k) => ({ id: v7At(now - 50_000 + k * 100), queue: `fin${k % 3}`, type: 'ft', status: pick(STATUSES), ms: now - 50_000 + k * 100 })));
    for (let round = 0; round < 20; round++) {
      await ds.transaction(async (m) => {
        // Ends, DLQ retries (failed → waiting), purges (failed stays failed), re-failures, at new finish times.
        await m.query(
          `UPDATE jobs SET status = (ARRAY['waiting','active','completed','failed','failed','cancelled'])[1 + floor(random() * 6)::int],
                           finished_at = CASE WHEN random() < 0.5 THEN finished_at ELSE now() - random() * interval '50 seconds' END
           WHERE queue LIKE 'fin%' AND random() < 0.2`,
        );
        await m.query(`UPDATE jobs SET finished_at = COALESCE(finished_at, now()) WHERE queue LIKE 'fin%' AND status IN ('completed', 'failed', 'cancelled')`);
        if (round % 4 === 3) throw new Error('rolled back');
      }).catch((e: Error) => {
        if (e.message !== 'rolled back') throw e;
      });
      const [kept, want] = await finished();
      expect(kept).toEqual(want);
    }
    // throughput() reads the buckets of the last minute (every queue of this database): the jobs finished in those whole seconds.
    const since = now - 60_000;
    const [tp] = await ds.query(THROUGHPUT_SQL, [since]);
    const [want] = await ds.query(
      `SELECT count(*) FILTER (WHERE status = 'completed')::float8 AS completed, count(*) FILTER (WHERE status = 'failed')::float8 AS failed
       FROM jobs WHERE date_trunc('second', finished_at) > to_timestamp($1::float8 / 1000)`,
      [since],
    );
    expect(tp).toEqual(want);
    expect(tp.completed + tp.failed).toBeGreaterThan(50);
  });

  test('the migration seeds them from the rows already there', async () => {
    const url = freshDatabaseUrl('seed');
    await ensureDatabase(url);
    const i = MIGRATIONS.findIndex((m) => m.name === 'HistoryQueries1796000300000');
    expect(i).toBeGreaterThan(0);
    const early = new DataSource({ type: 'postgres', url, migrations: MIGRATIONS.slice(0, i), migrationsTableName: 'sluice_migrations' });
    await early.initialize();
    try {
      await early.runMigrations({ transaction: 'each' });
      await insertJobs(early, Array.from({ length: 500 }, (_, k) => ({ id: uuidv7(), queue: `s${k % 3}`, type: 'st', status: pick(STATUSES), ms: Date.now() })));
      await early.query(`INSERT INTO dead_letter_jobs (job_id, queue, type, payload, attempts, failed_at) SELECT id, queue, type, payload, 1, now() FROM jobs WHERE status = 'failed'`);
    } finally {
      await early.destroy();
    }
    const full = createDataSource(url, 2);
    await full.initialize();
    try {
      expect((await full.runMigrations({ transaction: 'each' })).map((m) => m.name)).toEqual(MIGRATIONS.slice(i).map((m) => new m().name));
      const s = await exact(full);
      expect(s.jobs[0]).toEqual(s.jobs[1]);
      expect(s.jobs[1].length).toBeGreaterThan(10);
      expect(s.dlq[0]).toEqual(s.dlq[1]);
      expect(s.dlq[1]).toHaveLength(3);
      // job_finishes (1796000900000) is seeded with the last hour's finishes: these jobs finished just now.
      const [seeded] = await full.query(`SELECT sum(completed)::int AS c, sum(failed)::int AS f FROM job_finishes`);
      const [rows] = await full.query(`SELECT count(*) FILTER (WHERE status = 'completed')::int AS c, count(*) FILTER (WHERE status = 'failed')::int AS f FROM jobs`);
      expect(seeded).toEqual(rows);
      expect(rows.c).toBeGreaterThan(10);
    } finally {
      await full.destroy();
      await dropDatabase(url);
    }
  });
});
