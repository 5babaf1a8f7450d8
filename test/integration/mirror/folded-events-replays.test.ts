/**
 * The folded write model against replays grouped differently from the first
 * write (found by a review of the first version, each failing on it): the
 * same entry twice in a batch, a claim and a completion by different workers
 * replayed together, two runs of one execution replayed in one batch, a claim
 * stored by a later end row (its time must be the claim's own), and the soak
 * check's judgement of a mirrored job. Hand-made stream entries in the shape
 * lua/ emits, written with the writer's own writeBatch; the timeline is the
 * view job_timeline (GET /jobs/:id/events).
 */
import { writeBatch } from '../../../src/mirror/batch-writer';
import { entryFields, project, StreamEntry } from '../../../src/mirror/projection';
import { eventRows } from '../../support/mirror';
import { openTestDb, TestDb, v7At } from '../../support/postgres';

// eslint-disable-next-line @typescript-eslint/no-require-imports
const { loadHistory, judgeJob } = require('../../../scripts/lib/soak-check.js');

jest.setTimeout(30_000);

const Q = 'review-fold';
let db: TestDb;
let n = 0;
beforeAll(async () => {
  db = await openTestDb('foldrev');
});
afterAll(async () => {
  await db?.close();
});

const T0 = Date.now();
const ent = (ms: number, flat: string[]): StreamEntry => ({ queue: Q, id: `${ms}-${n++}`, fields: entryFields(flat) });
const enq = (id: string, at: number) => ent(at, ['h', `enqueued||waiting|0|${at}|${id}|||0||3;1000;exponential|2000|3600000|equal`, 'ty', 'r.t', 'p', '{"n":1}']);
const claim = (id: string, at: number, w = 'w1', x = 1) => ent(at, ['h', `claimed|waiting|active|1|${at}|${id}|${x}|`, 'w', w]);
const done = (id: string, at: number, ms: number, w = 'w1', x = 1) =>
  ent(at, ['h', `completed|active|completed|1|${at}|${id}|${x}|${ms}`, 'w', w, 'd', '{"ok":true}']);
const failed = (id: string, at: number) => ent(at, ['h', `failed|active|failed|1|${at}|${id}|1|`, 'w', 'w1', 'er', 'boom']);

const write = (batch: StreamEntry[], fresh = false) => db.dataSource.transaction((m) => writeBatch(m, project(batch), fresh));
const timeline = async (id: string) => (await eventRows(db.dataSource, [id])).map((r) => `${r.event}@${r.stream_ms}-${r.stream_seq}`);
const idOf = (e: StreamEntry) => e.id;

test('the same claimed and completed entries twice in one batch (idempotent form, new row): listed once', async () => {
  const id = v7At(T0);
  const e = enq(id, T0);
  const c = claim(id, T0 + 10);
  const d = done(id, T0 + 20, 10);
  await write([e]);
  await write([c, c, d, d]); // e.g. a backlog holding an entry twice after a lost-and-retaken queue (takeOver(q) with minIdleMs 0 filters nothing)
  expect(await timeline(id)).toEqual([`enqueued@${idOf(e)}`, `claimed@${idOf(c)}`, `completed@${idOf(d)}`]);
});

test('the same claimed entry twice in one fresh batch: listed once', async () => {
  const id = v7At(T0);
  const e = enq(id, T0);
  const c = claim(id, T0 + 10);
  await write([e], true);
  await write([c, c], true); // every copy of a held entry is held: nothing for the events COPY
  expect(await timeline(id)).toEqual([`enqueued@${idOf(e)}`, `claimed@${idOf(c)}`]);
});

test('a claim and a completion by different workers, written apart then replayed together: each listed once', async () => {
  const id = v7At(T0);
  const e = enq(id, T0);
  const c = claim(id, T0 + 10, 'w1');
  const d = done(id, T0 + 20, 10, 'w2');
  await write([e], true);
  await write([c], true);
  await write([d], true);
  const first = await timeline(id);
  expect(first).toEqual([`enqueued@${idOf(e)}`, `claimed@${idOf(c)}`, `completed@${idOf(d)}`]);
  await write([c, d]); // a takeover re-reading both
  expect(await timeline(id)).toEqual(first);
});

test('two runs of one execution (Redis rewound) written batch by batch, then replayed in one batch: each event once', async () => {
  const id = v7At(T0);
  const e = enq(id, T0);
  const c1 = claim(id, T0 + 10);
  const d1 = done(id, T0 + 20, 10);
  const c2 = claim(id, T0 + 1010);
  const d2 = done(id, T0 + 1020, 10);
  await write([e, c1, d1], true);
  await write([c2, d2]);
  const first = await timeline(id);
  expect(first).toEqual([`enqueued@${idOf(e)}`, `claimed@${idOf(c1)}`, `completed@${idOf(d1)}`, `claimed@${idOf(c2)}`, `completed@${idOf(d2)}`]);
  await write([e, c1, d1, c2, d2]);
  expect(await timeline(id)).toEqual(first);
});

test('an end without a duration (failed) written before its claim: the claim keeps its own time', async () => {
  const id = v7At(T0);
  const e = enq(id, T0);
  const c = claim(id, T0 + 10);
  const f = failed(id, T0 + 500);
  await write([e]);
  await write([f]);
  await write([c, f]);
  const rows = await eventRows(db.dataSource, [id]);
  expect(rows.map((r) => [r.event, r.at_ms])).toEqual([['enqueued', T0], ['claimed', T0 + 10], ['failed', T0 + 500]]);
});

test('the soak check (scripts/lib/soak-check.js) reads the timeline: a mirrored completed job is judged whole', async () => {
  const id = v7At(T0);
  await write([enq(id, T0)], true);
  await write([claim(id, T0 + 10), done(id, T0 + 20, 10)], true);
  const pg = { query: async (sql: string, p: unknown[]) => ({ rows: await db.dataSource.query(sql, p) }) };
  const h = await loadHistory(pg, [id]);
  const v = judgeJob({ kind: 'ok' }, h.rows.get(id), h.events.get(id), h.executions.get(id));
  expect(v.history).toEqual([]);
});
