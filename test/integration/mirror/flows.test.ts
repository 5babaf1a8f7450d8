/**
 * Workflows in the history (docs/workflows.md, migration
 * 1796001700000-Workflows): a flow job's `enqueued` event (fields fl, fp,
 * rf, dp: lua/enqueueJobs-5.lua) becomes jobs.flow_id / flow_ref /
 * on_dependency_failure and one job_dependencies row per edge, in the same
 * batch as the job row, through both write forms (COPY of a fresh batch,
 * INSERT … unnest of a replayed one), once however often the batch is
 * replayed. A `dp` the projection cannot read never stops the writer: the
 * job is mirrored without its dependencies and a warning names the entry,
 * never the value.
 */
import { randomUUID } from 'node:crypto';
import { v7 as uuidv7 } from 'uuid';
import { MirrorWriter } from '../../../src/mirror/mirror-writer';
import { planBatch, writeBatch } from '../../../src/mirror/batch-writer';
import { entryFields, project } from '../../../src/mirror/projection';
import { normalizeEnqueue } from '../../../src/core/job-options';
import { openTestDb, TestDb } from '../../support/postgres';
import { openStore, TestStore } from '../../support/redis';
import { captureStreams } from '../../support/mirror';
import { submitFlow } from '../../support/flows';

jest.setTimeout(120_000);

let t: TestStore;
let db: TestDb;
beforeAll(async () => {
  t = await openStore('mirror-flows');
  db = await openTestDb('mirror_flows');
});
afterAll(async () => {
  await t.close();
  await db.close();
});

/** Steps a real writer until every stream is mirrored; returns what it logged at warn. */
async function mirror(): Promise<{ o: Record<string, unknown>; msg?: string }[]> {
  const warns: { o: Record<string, unknown>; msg?: string }[] = [];
  const log = { debug() {}, info() {}, error() {}, warn: (o: object, msg?: string) => void warns.push({ o: o as Record<string, unknown>, msg }) };
  const w = new MirrorWriter(t.stores, db.dataSource, { writerId: `mf-${randomUUID().slice(0, 6)}` }, log);
  await (w as unknown as { refreshOwnership(): Promise<void> }).refreshOwnership();
  while ((await w.runOnce()) > 0);
  await w.stop();
  expect(w.stats.freshRetries).toBe(0);
  return warns;
}

type JobFlowRow = { id: string; status: string; flow_id: string | null; flow_ref: string | null; on_dependency_failure: string | null };
const jobRows = (ids: string[]): Promise<JobFlowRow[]> =>
  db.dataSource.query(`SELECT id, status, flow_id, flow_ref, on_dependency_failure FROM jobs WHERE id = ANY($1::uuid[]) ORDER BY id`, [ids]);
type EdgeRow = { job_id: string; depends_on_id: string; flow_id: string; ref: string; queue?: string | null };
const edges = (ids: string[]): Promise<EdgeRow[]> =>
  db.dataSource.query(`SELECT job_id, depends_on_id, flow_id, ref, queue FROM job_dependencies WHERE job_id = ANY($1::uuid[]) ORDER BY job_id, ref`, [ids]);
const sortRows = <T extends { id: string }>(rows: T[]) => [...rows].sort((a, b) => (a.id < b.id ? -1 : 1));
const sortEdges = (rows: EdgeRow[]) => [...rows].sort((a, b) => (a.job_id + a.ref < b.job_id + b.ref ? -1 : 1));

test('a flow across two queues: flow columns on every job, one row per edge, nothing on a plain job; a replayed batch adds nothing', async () => {
  const [q1, q2] = ['mf-a', 'mf-b'];
  for (const q of [q1, q2]) await t.stores.queues.register(q);
  const { flowId, id } = await submitFlow(t, [
    { ref: 'a', queue: q1 },
    { ref: 'b', queue: q2, deps: ['a'] },
    { ref: 'c', queue: q1, deps: ['a'], run: true },
    { ref: 'd', queue: q2, deps: ['b', 'c'] },
  ]);
  const [plain] = await t.store.enqueue([normalizeEnqueue({ queue: q1, type: 't', payload: {} }, 1e6)]);
  // What the writer will read (it deletes the entries it acknowledges).
  const entries = await captureStreams(t.redis, t, [q1, q2]);
  expect(entries.filter((e) => e.fields.e === 'enqueued' && e.fields.fl === flowId)).toHaveLength(4);
  await mirror();
  const all = [...Object.values(id), plain.id];
  expect(await jobRows(all)).toEqual(
    sortRows([
      { id: id.a, status: 'waiting', flow_id: flowId, flow_ref: 'a', on_dependency_failure: 'cancel' },
      { id: id.b, status: 'blocked', flow_id: flowId, flow_ref: 'b', on_dependency_failure: 'cancel' },
      { id: id.c, status: 'blocked', flow_id: flowId, flow_ref: 'c', on_dependency_failure: 'run' },
      { id: id.d, status: 'blocked', flow_id: flowId, flow_ref: 'd', on_dependency_failure: 'cancel' },
      { id: plain.id, status: 'waiting', flow_id: null, flow_ref: null, on_dependency_failure: null },
    ]),
  );
  const expected = sortEdges([
    { job_id: id.b, depends_on_id: id.a, flow_id: flowId, ref: 'a', queue: q1 },
    { job_id: id.c, depends_on_id: id.a, flow_id: flowId, ref: 'a', queue: q1 },
    { job_id: id.d, depends_on_id: id.b, flow_id: flowId, ref: 'b', queue: q2 },
    { job_id: id.d, depends_on_id: id.c, flow_id: flowId, ref: 'c', queue: q1 },
  ]);
  // Each edge names its dependency's queue (migration 1796002050000: the restore looks for a dependency PostgreSQL never heard of there).
  expect(sortEdges(await edges(all))).toEqual(expected);
  // The idempotent form writes the same rows.
  await db.dataSource.query(`DELETE FROM job_dependencies WHERE flow_id = $1`, [flowId]);
  await writeBatch(db.dataSource, project(entries), false);
  expect(sortEdges(await edges(all))).toEqual(expected);

  // The mirror applies the same entries again after a crash: the idempotent form, twice, changes nothing.
  await writeBatch(db.dataSource, project(entries), false);
  await writeBatch(db.dataSource, project(entries), false);
  expect(sortEdges(await edges(all))).toEqual(expected);
  const [{ n }] = await db.dataSource.query(`SELECT count(*)::int AS n FROM job_dependencies WHERE flow_id = $1`, [flowId]);
  expect(n).toBe(4);
  // And the fresh form (COPY) of a batch already written is refused as a whole (the writer then takes the idempotent form).
  await expect(writeBatch(db.dataSource, project(entries), true)).rejects.toMatchObject({ code: '23505' });
  expect(await jobRows([id.d])).toEqual([{ id: id.d, status: 'blocked', flow_id: flowId, flow_ref: 'd', on_dependency_failure: 'cancel' }]);
});

const OPTIONS = '3;600000;exponential|2000|3600000|equal';
/** The flat fields of a flow job's `enqueued` entry as lua/enqueueJobs-5.lua writes it. */
const flowEnqueued = (id: string, at: number, flow: { fl: string; fp?: string; rf?: string; dp?: string }): string[] => [
  'h', `enqueued||blocked|0|${at}|${id}|||0|${at}|${OPTIONS}`, 'ty', 't', 'p', '{"secret":"payload-value"}',
  'fl', flow.fl, ...(flow.fp === undefined ? [] : ['fp', flow.fp]), ...(flow.rf === undefined ? [] : ['rf', flow.rf]), ...(flow.dp === undefined ? [] : ['dp', flow.dp]),
];

test('a dp the projection cannot read: the job is mirrored without dependencies, a warning names the entry (never the value), the writer goes on', async () => {
  const q = 'mf-bad';
  await t.stores.queues.register(q);
  const fl = randomUUID();
  const dep = (ref: string, depId = uuidv7()) => ({ ref, id: depId, queue: q });
  const many = JSON.stringify(Array.from({ length: 1001 }, (_, i) => dep(`r${i}`)));
  const twice = uuidv7();
  const cases: [string, string][] = [
    ['notjson', '[{"ref":"a","id":'],
    ['object', '{"ref":"a","id":"x","queue":"q"}'],
    ['badid', JSON.stringify([dep('a', 'not-a-uuid')])],
    ['badref', JSON.stringify([dep('a b')])],
    ['noqueue', JSON.stringify([{ ref: 'a', id: uuidv7() }])],
    ['many', many],
    ['twice', JSON.stringify([dep('a', twice), dep('b', twice)])],
  ];
  const good = uuidv7();
  const goodDeps = [dep('x'), dep('y')];
  const ids = Object.fromEntries(cases.map(([name]) => [name, uuidv7()]));
  const plainish = uuidv7();
  const now = Date.now();
  const events = t.keys(q).events;
  for (const [name, dp] of cases) await t.redis.xadd(events, '*', ...flowEnqueued(ids[name], now, { fl, fp: 'c', rf: name, dp }));
  await t.redis.xadd(events, '*', ...flowEnqueued(good, now, { fl, fp: 'r', rf: 'good', dp: JSON.stringify(goodDeps) }));
  // A flow id that is not a UUID: the job is mirrored as one outside flows.
  await t.redis.xadd(events, '*', ...flowEnqueued(plainish, now, { fl: 'not-a-uuid', fp: 'c', rf: 'p', dp: '[]' }));
  const entryIds = (await t.redis.xrange(events, '-', '+')).map(([eid]) => eid);

  const warns = await mirror();

  const rows = await jobRows([...Object.values(ids), good, plainish]);
  expect(rows).toHaveLength(cases.length + 2);
  for (const [name] of cases) expect(rows.find((r) => r.id === ids[name])).toEqual({ id: ids[name], status: 'blocked', flow_id: fl, flow_ref: name, on_dependency_failure: 'cancel' });
  expect(rows.find((r) => r.id === good)).toEqual({ id: good, status: 'blocked', flow_id: fl, flow_ref: 'good', on_dependency_failure: 'run' });
  expect(rows.find((r) => r.id === plainish)).toEqual({ id: plainish, status: 'blocked', flow_id: null, flow_ref: null, on_dependency_failure: null });
  expect(await edges([...Object.values(ids), plainish])).toEqual([]);
  expect(sortEdges(await edges([good]))).toEqual(goodDeps.map((d) => ({ job_id: good, depends_on_id: d.id, flow_id: fl, ref: d.ref, queue: q })));
  // Nothing quarantined: every entry made its row.
  const [{ n }] = await db.dataSource.query(`SELECT count(*)::int AS n FROM audit_quarantine`);
  expect(n).toBe(0);

  const warn = warns.find((w) => w.msg === 'audit writer: entries mirrored in part');
  expect(warn?.o).toMatchObject({ streamKey: events, count: cases.length + 1 });
  expect(warn!.o.entries).toEqual([...entryIds.slice(0, cases.length), entryIds[cases.length + 1]]);
  const text = JSON.stringify(warns);
  for (const v of ['payload-value', 'not-a-uuid', 'a b', '"ref"']) expect(text).not.toContain(v);
});

test('set-based: a batch of 50 jobs × 1,000 dependencies is one statement for the edges, in both forms; a replay adds nothing', async () => {
  const fl = randomUUID();
  const at = Date.now();
  const jobs = Array.from({ length: 50 }, () => uuidv7());
  const entries = () =>
    jobs.map((id, i) => ({
      queue: 'mf-big',
      id: `${at}-${i}`,
      fields: entryFields(flowEnqueued(id, at, { fl, fp: 'c', rf: `j${i}`, dp: JSON.stringify(Array.from({ length: 1000 }, (_, k) => ({ ref: `d${i}.${k}`, id: uuidv7(), queue: 'mf-big' }))) })),
    }));
  const first = entries();
  const batch = project(first);
  expect(batch.dependencies).toHaveLength(50_000);
  expect(batch.warnings).toEqual([]);
  for (const fresh of [true, false]) expect(planBatch(batch, fresh).filter((s) => s.sql.includes('job_dependencies'))).toHaveLength(1);
  await writeBatch(db.dataSource, batch, true);
  await writeBatch(db.dataSource, project(first), false);
  const [{ n, jobsN }] = await db.dataSource.query(
    `SELECT (SELECT count(*)::int FROM job_dependencies WHERE flow_id = $1) AS n, (SELECT count(*)::int FROM jobs WHERE flow_id = $1) AS "jobsN"`,
    [fl],
  );
  expect([n, jobsN]).toEqual([50_000, 50]);
});
