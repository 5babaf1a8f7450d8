/**
 * Workflows read from the history (src/history/flows.ts, list-jobs.ts,
 * common.ts) on real Redis and PostgreSQL: flows submitted through the
 * stores (test/support/flows.ts), mirrored by a real MirrorWriter, then
 * - the job rows carry flowId and flowRef (null outside flows);
 * - dependenciesOf and flowJobs, project-scoped;
 * - `listJobs({flowId})` with every other filter, across pages, and a bad
 *   flowId refused (history and the GET /jobs query DTO).
 */
import { randomUUID } from 'node:crypto';
import { plainToInstance } from 'class-transformer';
import { validate } from 'class-validator';
import { MirrorWriter } from '../../../src/mirror/mirror-writer';
import { HistoryQueries } from '../../../src/history';
import { dependenciesOf, flowJobs } from '../../../src/history/flows';
import { ValidationError } from '../../../src/core/errors';
import { normalizeEnqueue, type NormalizedEnqueue } from '../../../src/core/job-options';
import { ListJobsQueryDto } from '../../../src/jobs/dto/list-jobs.dto';
import { openTestDb, TestDb } from '../../support/postgres';
import { openStore, TestStore } from '../../support/redis';
import { FlowSpec, submitFlow } from '../../support/flows';

jest.setTimeout(120_000);

let t: TestStore;
let db: TestDb;
let h: HistoryQueries;
beforeAll(async () => {
  t = await openStore('hist-flows');
  db = await openTestDb('hist_flows');
  h = new HistoryQueries(db.dataSource, t.stores);
});
afterAll(async () => {
  await t?.close();
  await db?.close();
});

async function mirror(): Promise<void> {
  const w = new MirrorWriter(t.stores, db.dataSource, { writerId: `hf-${randomUUID().slice(0, 6)}` });
  await (w as unknown as { refreshOwnership(): Promise<void> }).refreshOwnership();
  while ((await w.runOnce()) > 0);
  await w.stop();
}

const Q1 = 'hf-one';
const Q2 = 'hf-two';
const QA = 'acme/hf-three';
/** refs → ids per flow. */
let big: { flowId: string; id: Record<string, string> };
let diamond: { flowId: string; id: Record<string, string> };
let acme: { flowId: string; id: Record<string, string> };
let plain: string;
const bigSpecs: FlowSpec[] = [];

beforeAll(async () => {
  for (const q of [Q1, Q2, QA]) await t.stores.queues.register(q);
  // 120 jobs over two queues and two types; job i waits for i-1 and i-7 (when they exist).
  for (let i = 0; i < 120; i++) {
    const deps = [i - 1, i - 7].filter((k) => k >= 0).map((k) => `n${k}`);
    bigSpecs.push({ ref: `n${i}`, queue: i % 3 ? Q1 : Q2, type: i % 2 ? 'hf.odd' : 'hf.even', deps });
  }
  big = await submitFlow(t, bigSpecs);
  diamond = await submitFlow(t, [{ ref: 'a', queue: Q1 }, { ref: 'b', queue: Q2, deps: ['a'] }, { ref: 'c', queue: Q1, deps: ['a'], run: true }, { ref: 'd', queue: Q2, deps: ['b', 'c'] }]);
  acme = await submitAcme();
  [{ id: plain }] = await t.store.enqueue([normalizeEnqueue({ queue: Q1, type: 'hf.odd', payload: {} }, 1e6)]);
  await mirror();
});

/** A flow of two jobs in QA, enqueued blocked (as submitFlow does, the queue qualified as the server qualifies it: normalizeEnqueue takes bare names). */
async function submitAcme(): Promise<{ flowId: string; id: Record<string, string> }> {
  const flowId = randomUUID();
  const id = { x: randomUUID(), y: randomUUID() };
  const job = (ref: 'x' | 'y', deps: ('x' | 'y')[]): NormalizedEnqueue => ({
    ...normalizeEnqueue({ queue: 'hf-three', type: 't', payload: {} }, 1e6),
    queue: QA,
    flow: { flowId, jobId: id[ref], ref, onDependencyFailure: 'cancel', dependsOn: deps.map((r) => ({ ref: r, id: id[r], queue: QA })) },
  });
  await t.store.enqueue([job('x', []), job('y', ['x'])]);
  return { flowId, id };
}

test('jobs read from PostgreSQL carry flowId and flowRef; null outside flows', async () => {
  const page = await h.listJobs({ queue: Q2, limit: 500 });
  const d = page.items.find((j) => j.id === diamond.id.d)!;
  expect([d.flowId, d.flowRef]).toEqual([diamond.flowId, 'd']);
  const p = (await h.listJobs({ queue: Q1, limit: 500 })).items.find((j) => j.id === plain)!;
  expect([p.flowId, p.flowRef]).toEqual([null, null]);
});

test('dependenciesOf: the refs and ids, project-scoped; null for a job PostgreSQL does not know in the project', async () => {
  const { id } = diamond;
  expect(await dependenciesOf(db.dataSource, id.d, 'default')).toEqual([
    { ref: 'b', id: id.b },
    { ref: 'c', id: id.c },
  ]);
  expect(await h.dependenciesOf(id.d.toUpperCase(), 'default')).toEqual([
    { ref: 'b', id: id.b },
    { ref: 'c', id: id.c },
  ]);
  expect(await dependenciesOf(db.dataSource, id.a, 'default')).toEqual([]);
  expect(await dependenciesOf(db.dataSource, plain, 'default')).toEqual([]);
  expect(await dependenciesOf(db.dataSource, big.id.n50, 'default')).toEqual([
    { ref: 'n43', id: big.id.n43 },
    { ref: 'n49', id: big.id.n49 },
  ]);
  // Another project's job, an unknown id, not a UUID.
  expect(await dependenciesOf(db.dataSource, id.d, 'acme')).toBeNull();
  expect(await dependenciesOf(db.dataSource, acme.id.y, 'default')).toBeNull();
  expect(await dependenciesOf(db.dataSource, acme.id.y, 'acme')).toEqual([{ ref: 'x', id: acme.id.x }]);
  expect(await dependenciesOf(db.dataSource, randomUUID(), 'default')).toBeNull();
  expect(await dependenciesOf(db.dataSource, 'nope', 'default')).toBeNull();
});

test("flowJobs: every job of the flow with its ref, status and dependency ids; another project's flow is empty", async () => {
  const { flowId, id } = diamond;
  const jobs = await h.flowJobs(flowId, 'default');
  const byRef = Object.fromEntries(jobs.map((j) => [j.ref, j]));
  expect(jobs.map((j) => j.id)).toEqual(Object.values(id).sort());
  expect(byRef).toEqual({
    a: { id: id.a, ref: 'a', status: 'waiting', dependsOn: [] },
    b: { id: id.b, ref: 'b', status: 'blocked', dependsOn: [id.a] },
    c: { id: id.c, ref: 'c', status: 'blocked', dependsOn: [id.a] },
    d: { id: id.d, ref: 'd', status: 'blocked', dependsOn: [id.b, id.c] },
  });
  const all = await flowJobs(db.dataSource, big.flowId, 'default');
  expect(all).toHaveLength(120);
  for (const s of bigSpecs) {
    const j = all.find((x) => x.ref === s.ref)!;
    expect(j.id).toBe(big.id[s.ref]);
    expect([...j.dependsOn].sort()).toEqual((s.deps ?? []).map((r) => big.id[r]).sort());
  }
  expect(await flowJobs(db.dataSource, flowId, 'acme')).toEqual([]);
  expect(await flowJobs(db.dataSource, acme.flowId, 'default')).toEqual([]);
  expect((await flowJobs(db.dataSource, acme.flowId, 'acme')).map((j) => j.ref).sort()).toEqual(['x', 'y']);
  expect(await flowJobs(db.dataSource, randomUUID(), 'default')).toEqual([]);
  expect(await flowJobs(db.dataSource, 'not-a-uuid', 'default')).toEqual([]);
});

test('listJobs({flowId}): exactly the flow’s jobs with every other filter, newest first, across pages', async () => {
  const info = bigSpecs.map((s) => ({ id: big.id[s.ref], queue: s.queue, type: s.type!, status: s.deps!.length ? 'blocked' : 'waiting' }));
  const combos: { queue?: string; status?: string; type?: string; project?: string }[] = [];
  for (const queue of [undefined, Q2])
    for (const status of [undefined, 'blocked', 'waiting'])
      for (const type of [undefined, 'hf.odd']) combos.push({ queue, status, type });
  combos.push({ project: 'default' }, { project: 'default', status: 'blocked', type: 'hf.even' }, { project: 'acme' });
  for (const f of combos) {
    const want = info
      .filter((r) => (!f.queue || r.queue === f.queue) && (!f.status || r.status === f.status) && (!f.type || r.type === f.type) && f.project !== 'acme')
      .map((r) => r.id)
      .sort()
      .reverse();
    const got: string[] = [];
    let cursor: string | undefined;
    do {
      const page = await h.listJobs({ ...f, flowId: big.flowId.toUpperCase(), cursor, limit: 13 });
      if (page.nextCursor) expect(page.items).toHaveLength(13);
      for (const j of page.items) expect(j.flowId).toBe(big.flowId);
      got.push(...page.items.map((j) => j.id));
      cursor = page.nextCursor ?? undefined;
    } while (cursor);
    expect({ f, ids: got }).toEqual({ f, ids: want });
  }
  // Created-time range (an id range) with the flow: the ids are v4 here (submitFlow), so only the unbounded answer is checked.
  expect((await h.listJobs({ flowId: diamond.flowId, limit: 500 })).items.map((j) => j.id).sort()).toEqual(Object.values(diamond.id).sort());
  expect((await h.listJobs({ flowId: acme.flowId, project: 'acme' })).items.map((j) => j.flowRef).sort()).toEqual(['x', 'y']);
  expect((await h.listJobs({ flowId: acme.flowId, project: 'default' })).items).toEqual([]);
  expect(await h.listJobs({ flowId: randomUUID() })).toEqual({ items: [], nextCursor: null });
});

test('a flowId that is not a UUID is a validation error (history), and a 400 of the GET /jobs query DTO', async () => {
  for (const flowId of ['x', '', `${randomUUID()}0`, 'zzzzzzzz-zzzz-zzzz-zzzz-zzzzzzzzzzzz']) {
    const e = await h.listJobs({ flowId }).then(
      () => null,
      (err: unknown) => err,
    );
    expect(e).toBeInstanceOf(ValidationError);
    expect((e as ValidationError).details?.[0]?.path).toBe('flowId');
    const errors = await validate(plainToInstance(ListJobsQueryDto, { flowId }));
    expect(errors.map((x) => x.property)).toEqual(['flowId']);
  }
  expect(await validate(plainToInstance(ListJobsQueryDto, { flowId: randomUUID().toUpperCase() }))).toEqual([]);
});
