/**
 * The folded write model (issue 22; migration 1796001900000-FoldedExecutionEvents):
 * a job's `claimed` and `completed` events are held by its execution's row, not
 * written as job_events rows, and `job_timeline` (GET /jobs/:id/events) gives
 * them back field for field. Real Redis entries (enqueue, claim, complete), written
 * by the writer's own writeBatch to real PostgreSQL in the shapes the writer meets:
 * claim and completion in one batch or split over two, fresh or replayed, older
 * batches after newer ones; and the cases a row cannot hold — a second claim of
 * the same execution (Redis rewound to an older snapshot ran it again), a
 * completion by another worker — which must come back as job_events rows.
 */
import { UNIQUE_VIOLATION, writeBatch } from '../../../src/mirror/batch-writer';
import { project, StreamEntry } from '../../../src/mirror/projection';
import { normalizeEnqueue } from '../../../src/core/job-options';
import { jobEvents } from '../../../src/history/job-events';
import { captureStreams, eventRows, expectedEventRow } from '../../support/mirror';
import { unfolded } from '../../support/history-rows';
import { openTestDb, TestDb } from '../../support/postgres';
import { openStore, TestStore } from '../../support/redis';

jest.setTimeout(60_000);

const Q = 'fold-a';
const W = 'worker-fold';

let t: TestStore;
let db: TestDb;
/** Three jobs' entries, in stream order: enqueued ×3, then claimed and completed of each. */
let entries: StreamEntry[];
let ids: string[];

beforeAll(async () => {
  t = await openStore('audit-fold');
  db = await openTestDb('fold');
  const made = await t.store.enqueue([1, 2, 3].map((v) => normalizeEnqueue({ queue: Q, type: 'fold.t', payload: { v } }, 1_000_000)));
  ids = made.map((r) => r.id);
  const c = await t.store.claim(Q, 3, 60_000, W);
  expect(c.jobs).toHaveLength(3);
  await t.store.complete(Q, W, c.jobs.map((j, i) => ({ id: j.id, lockToken: j.lockToken, result: { ok: i } })));
  entries = await captureStreams(t.redis, t, [Q]);
  expect(entries.map((e) => e.fields.e)).toEqual(['enqueued', 'enqueued', 'enqueued', 'claimed', 'claimed', 'claimed', 'completed', 'completed', 'completed']);
});
afterAll(async () => {
  await t?.close();
  await db?.close();
});

const write = (batch: StreamEntry[], fresh = false) => db.dataSource.transaction((m) => writeBatch(m, project(batch), fresh));

async function wipe(): Promise<void> {
  for (const table of ['job_events', 'job_executions', 'job_logs']) await db.dataSource.query(`DELETE FROM ${table} WHERE job_id = ANY($1::uuid[])`, [ids]);
  await db.dataSource.query(`DELETE FROM jobs WHERE id = ANY($1::uuid[])`, [ids]);
}

const of = (id: string, e: string) => entries.find((x) => x.fields.j === id && x.fields.e === e)!;

/** The job_events rows (the table itself, not the view) of the jobs: event names per job, in stream order. */
async function physicalEvents(): Promise<string[][]> {
  const rows = await db.dataSource.query(`SELECT job_id::text AS id, event FROM job_events WHERE job_id = ANY($1::uuid[]) ORDER BY stream_ms, stream_seq`, [ids]);
  return ids.map((id) => rows.filter((r: any) => r.id === id).map((r: any) => r.event));
}

/** What the timeline must be: one row per entry, field for field, stream order (the events test's own expectation). */
const expected = (list: StreamEntry[]) => list.map(expectedEventRow);

async function snapshot() {
  return {
    timeline: await eventRows(db.dataSource, ids),
    executions: await db.dataSource.query(`SELECT * FROM job_executions WHERE job_id = ANY($1::uuid[]) ORDER BY job_id, execution_seq`, [ids]),
    physical: await physicalEvents(),
  };
}

test('claim and completion in one batch, or split over two: the execution row holds both events, the timeline lists them as they were', async () => {
  await wipe();
  const [a, b, c] = ids;
  await write(entries.filter((e) => e.fields.e === 'enqueued'), true);
  // a: claim and completion together (one whole row); b: split over two fresh batches; c: split, written as a replay would be.
  await write([of(a, 'claimed'), of(a, 'completed'), of(b, 'claimed')], true);
  await write([of(b, 'completed')], true);
  await write([of(c, 'claimed')]);
  await write([of(c, 'completed')]);
  const s = await snapshot();
  expect(s.physical).toEqual([['enqueued'], ['enqueued'], ['enqueued']]);
  expect(s.timeline).toEqual(expected(entries));
  for (const x of s.executions) {
    expect([x.outcome, x.claim_ms, x.end_ms, x.result]).toEqual(['completed', expect.any(String), expect.any(String), expect.stringMatching(/^\{"ok":\d\}$/)]);
  }
  // GET /jobs/:id/events reads the view: numbered, in order, the result as the completed event's data.
  const api = await jobEvents(db.dataSource, b);
  expect(api.items.map((e) => [e.seq, e.event, e.from, e.to, e.attempt, e.workerId, e.data])).toEqual([
    [1, 'enqueued', null, 'waiting', 0, null, { v: 2 }],
    [2, 'claimed', 'waiting', 'active', 1, W, null],
    [3, 'completed', 'active', 'completed', 1, W, { ok: 1 }],
  ]);
  expect(api.items[1].at).toBe(Number(of(b, 'claimed').fields.at));
  expect(api.items[2].at).toBe(Number(of(b, 'completed').fields.at));
});

test('replays and older batches after newer ones: the same timeline and rows, no event twice', async () => {
  await wipe();
  for (const e of entries) await write([e], true);
  const first = await snapshot();
  expect(first.timeline).toEqual(expected(entries));
  // Every batch again, whole, reversed, and entry by entry newest first (a writer that stalled, a takeover).
  await write(entries);
  expect(await snapshot()).toEqual(first);
  for (const e of [...entries].reverse()) await write([e]);
  expect(await snapshot()).toEqual(first);
  // First writes out of order: each completion before its claim.
  await wipe();
  await write(entries.filter((e) => e.fields.e === 'enqueued'));
  for (const e of entries.filter((x) => x.fields.e === 'completed')) await write([e]);
  for (const e of entries.filter((x) => x.fields.e === 'claimed')) await write([e]);
  const late = await snapshot();
  expect(late.timeline).toEqual(expected(entries));
  expect(late.physical).toEqual([['enqueued'], ['enqueued'], ['enqueued']]);
  // started_at is the claim's own time once the claim arrives (the completion gave at − ms before).
  expect(late.executions.map((x: any) => x.started_at.getTime())).toEqual(
    [...ids].sort().map((id) => Number(of(id, 'claimed').fields.at)),
  );
});

test('a second claim of the same execution (Redis rewound) and a completion by another worker come back as job_events rows', async () => {
  await wipe();
  const [a, b] = ids;
  await write(entries);
  // Redis rewound: job a claimed again as the same execution, under a newer stream id, and completed again.
  const top = entries[entries.length - 1].id.split('-').map(Number);
  const again = (e: StreamEntry, n: number, fields: Record<string, string> = {}): StreamEntry => ({
    queue: Q,
    id: `${top[0] + 1000}-${n}`,
    fields: { ...e.fields, at: String(Number(e.fields.at) + 1000), ...fields },
  });
  const claim2 = again(of(a, 'claimed'), 0);
  const done2 = again(of(a, 'completed'), 1, { d: '{"ok":"again"}' });
  await write([claim2, done2]);
  // Job b's completion under another worker id (the row's worker is the claimant's): not held, a job_events row.
  const other = again(of(b, 'completed'), 2, { w: 'another-worker' });
  await write([other], true);
  const s = await snapshot();
  expect(s.physical).toEqual([['enqueued', 'claimed', 'completed'], ['enqueued', 'completed'], ['enqueued']]);
  const all = [...entries, claim2, done2, other];
  expect(s.timeline).toEqual(expected(all.filter((e) => e.fields.j === a || e.fields.j === b || e.fields.j === ids[2])).sort(
    (x, y) => Number(BigInt(x.stream_ms) - BigInt(y.stream_ms)) || Number(x.stream_seq) - Number(y.stream_seq),
  ));
  // Replayed, nothing changes.
  await write([claim2, done2, other]);
  expect(await snapshot()).toEqual(s);
  // A fresh batch meeting a row that exists fails whole (the writer then writes it again idempotently).
  await expect(write([claim2, done2], true)).rejects.toMatchObject({ code: UNIQUE_VIOLATION });
});

test('history written before the folded model (claimed and completed as job_events rows, executions without their ids) lists each event once', async () => {
  await wipe();
  // The previous writer's rows: the same projection without anything held by the execution rows.
  await db.dataSource.transaction((m) => writeBatch(m, unfolded(project(entries))));
  const before = await snapshot();
  expect(before.physical).toEqual(ids.map(() => ['enqueued', 'claimed', 'completed']));
  expect(before.timeline).toEqual(expected(entries));
  // The new writer replaying them (a takeover after the upgrade) holds nothing twice.
  await write(entries);
  expect((await snapshot()).timeline).toEqual(expected(entries));
});
