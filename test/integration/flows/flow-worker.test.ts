/**
 * The flow worker's pass (src/flows/flow-worker.ts) over real Redis: a
 * diamond across two queues runs in dependency order, driven only by the
 * queues' flow outboxes; a failure cancels the default dependents down the
 * graph while a "run" dependent runs; a DLQ retry brings the cancelled back
 * and they complete; an entry taken by a worker that died is handed out again
 * after its lease and applied once.
 */
import { advanceFlows, applyBatch, FLOW_LEASE_MS } from '../../../src/flows/flow-worker';
import { openStore, sleep, TestStore } from '../../support/redis';
import { expectLegal, scriptHelpers } from '../../support/scripts';
import { FlowSpec, runReady as ready, submitFlow } from '../../support/flows';

let t: TestStore;
beforeAll(async () => {
  t = await openStore('flowworker');
});
afterAll(async () => {
  await t.close();
});
const { newQueue, raw, events } = scriptHelpers(() => t, 'flowworker');

const submit = (specs: FlowSpec[]) => submitFlow(t, specs);

const status = async (q: string, id: string) => (await raw(q, id)).s;

const runReady = (q: string, fail?: Set<string>) => ready(t, q, fail);

it('a diamond across two queues runs in dependency order, released only by the outboxes', async () => {
  const [q1, q2] = [newQueue(), newQueue()];
  const { id } = await submit([{ ref: 'a', queue: q1 }, { ref: 'b', queue: q2, deps: ['a'] }, { ref: 'c', queue: q1, deps: ['a'] }, { ref: 'd', queue: q2, deps: ['b', 'c'] }]);
  expect(await Promise.all(['b', 'c', 'd'].map((r) => status(r === 'c' ? q1 : q2, id[r])))).toEqual(['blocked', 'blocked', 'blocked']);
  expect(await runReady(q2)).toEqual([]);
  expect(await runReady(q1)).toEqual([id.a]);
  expect(await advanceFlows(t.stores.flows)).toBeGreaterThanOrEqual(1);
  expect(await runReady(q1)).toEqual([id.c]);
  expect(await runReady(q2)).toEqual([id.b]);
  expect(await status(q2, id.d)).toBe('blocked');
  await advanceFlows(t.stores.flows);
  expect(await runReady(q2)).toEqual([id.d]);
  await advanceFlows(t.stores.flows);
  expect(await t.redis.hmget(`${t.prefix}:{flow:${(await raw(q2, id.d)).fl}}:meta`, 'nc', 'nx')).toEqual(['4', '0']);
  for (const q of [q1, q2]) expectLegal(await events(q));
});

it('a failure cancels the default dependents down the graph, a "run" dependent runs; a DLQ retry brings them back and they complete', async () => {
  const [q1, q2] = [newQueue(), newQueue()];
  const { id } = await submit([{ ref: 'a', queue: q1 }, { ref: 'b', queue: q2, deps: ['a'] }, { ref: 'r', queue: q2, deps: ['a'], run: true }, { ref: 'd', queue: q1, deps: ['b'] }]);
  expect(await runReady(q1, new Set([id.a]))).toEqual([id.a]);
  expect(await status(q1, id.a)).toBe('failed');
  // Two passes: a's failure cancels b (its outbox entry), b's cancellation cancels d.
  await advanceFlows(t.stores.flows);
  await advanceFlows(t.stores.flows);
  expect([await status(q2, id.b), await status(q1, id.d), await status(q2, id.r)]).toEqual(['cancelled', 'cancelled', 'waiting']);
  expect((await events(q2, id.b)).map((e) => `${e.e}:${e.r ?? ''}`)).toEqual(['enqueued:', 'cancelled:dependency_failed']);
  expect(await runReady(q2)).toEqual([id.r]);
  // The DLQ retry of a: b and d are blocked again, then run after a completes.
  await t.stores.deadLetters.retry(q1, id.a);
  await advanceFlows(t.stores.flows);
  expect([await status(q2, id.b), await status(q1, id.d)]).toEqual(['blocked', 'blocked']);
  expect(await runReady(q1)).toEqual([id.a]);
  await advanceFlows(t.stores.flows);
  expect(await runReady(q2)).toEqual([id.b]);
  await advanceFlows(t.stores.flows);
  expect(await runReady(q1)).toEqual([id.d]);
  for (const q of [q1, q2]) expectLegal(await events(q));
});

it('an entry taken by a worker that died is handed out again after its lease, and applied once', async () => {
  const q = newQueue();
  const { id } = await submit([{ ref: 'a', queue: q }, { ref: 'b', queue: q, deps: ['a'] }, { ref: 'c', queue: q, deps: ['a', 'b'] }]);
  expect(await runReady(q)).toEqual([id.a]);
  // A worker takes a's entry and dies before acknowledging it.
  const taken = await t.stores.flows.take(q, 10, 1000);
  expect(taken.map((e) => [e.jobId, e.outcome])).toEqual([[id.a, 'completed']]);
  // Halfway: the record was advanced (b released in the record) but b not yet unblocked.
  await t.stores.flows.advance(taken[0].flowId, id.a, 'completed');
  expect(await t.stores.flows.take(q, 10, 1000)).toEqual([]);
  await sleep(1100);
  expect(await advanceFlows(t.stores.flows)).toBeGreaterThanOrEqual(1); // (other tests' queues are watched too)
  expect(await runReady(q)).toEqual([id.b]);
  await advanceFlows(t.stores.flows);
  expect(await runReady(q)).toEqual([id.c]);
  // One unblocked event each: nothing applied twice.
  const ev = await events(q);
  expect(ev.filter((e) => e.e === 'unblocked').map((e) => e.j).sort()).toEqual([id.a, id.b, id.c].sort());
  expectLegal(ev);
});

it('a claimed flow job carries its dependencies with their status, lean (in-process) and full (external) alike', async () => {
  const [q1, q2] = [newQueue(), newQueue()];
  const { id } = await submit([{ ref: 'a', queue: q1 }, { ref: 'b', queue: q2 }, { ref: 'r', queue: q2, deps: ['a', 'b'], run: true }, { ref: 'd', queue: q2, deps: ['a', 'b'], run: true }]);
  expect(await runReady(q1, new Set([id.a]))).toEqual([id.a]);
  // b: claimed, completed; its hash then forgotten, as after mirroring: its status comes from the flow's record.
  const [bj] = (await t.store.claim(q2, 1, 30_000, 'w')).jobs;
  expect(bj.id).toBe(id.b);
  expect(bj.dependencies).toEqual([]);
  await t.store.complete(q2, 'w', [{ id: id.b, lockToken: bj.lockToken, result: null }]);
  await advanceFlows(t.stores.flows);
  await advanceFlows(t.stores.flows);
  await t.redis.del(`${t.keys(q2).base}job:${id.b}`);
  const lean = await t.store.claimForWorker(q2, 1, 30_000, 'w', true);
  const full = (await t.store.claim(q2, 1, 30_000, 'w')).jobs;
  const both = [...lean.jobs, ...full];
  expect(both.map((j) => j.id).sort()).toEqual([id.r, id.d].sort());
  for (const j of both) expect(j.dependencies).toEqual([{ ref: 'a', id: id.a, status: 'failed' }, { ref: 'b', id: id.b, status: 'completed' }]);
  expect(lean.jobs[0].traceparent).toBeNull();
});

it("a failure's entry handed out again after the DLQ retry was applied changes nothing: the dependent waits and runs after the retried job", async () => {
  const q = newQueue();
  const { id } = await submit([{ ref: 'a', queue: q }, { ref: 'd', queue: q, deps: ['a'] }]);
  expect(await runReady(q, new Set([id.a]))).toEqual([id.a]);
  // A flow worker takes a's failure, applies it (d cancelled), then d's
  // cancellation, and dies before acknowledging either.
  const taken = await t.stores.flows.take(q, 10, 1000);
  expect(taken.map((e) => [e.jobId, e.outcome])).toEqual([[id.a, 'ended']]);
  await applyBatch(t.stores.flows, taken);
  expect(await status(q, id.d)).toBe('cancelled');
  const cascade = await t.stores.flows.take(q, 10, 1000);
  expect(cascade.map((e) => [e.jobId, e.outcome])).toEqual([[id.d, 'ended']]);
  await applyBatch(t.stores.flows, cascade);
  // The DLQ retry of a, applied while a's failure is still in flight: d is blocked again.
  await t.stores.deadLetters.retry(q, id.a);
  await advanceFlows(t.stores.flows, [q]);
  expect(await status(q, id.d)).toBe('blocked');
  // The leases run out: both come again, older than what was applied since: ignored.
  await sleep(1100);
  expect(await advanceFlows(t.stores.flows, [q])).toBe(2);
  expect(await status(q, id.d)).toBe('blocked');
  expect(await runReady(q)).toEqual([id.a]);
  await advanceFlows(t.stores.flows, [q]);
  expect(await runReady(q)).toEqual([id.d]);
  expect((await events(q, id.d)).map((e) => e.e)).toEqual(['enqueued', 'cancelled', 'blocked', 'unblocked', 'claimed', 'completed']);
  await advanceFlows(t.stores.flows, [q]);
  expect(await t.redis.hmget(`${t.prefix}:{flow:${(await raw(q, id.d)).fl}}:meta`, 'nc', 'nx')).toEqual(['2', '0']);
  expectLegal(await events(q));
});

it("a dependent's queue fenced after a Redis restart (not yet checked by the restore watch): its release is kept and carried out once the queue is checked", async () => {
  const [q1, q2] = [newQueue(), newQueue()];
  const { id } = await submit([{ ref: 'a', queue: q1 }, { ref: 'd', queue: q2, deps: ['a'] }]);
  // q2 was checked on another Redis server (the restart): fenced until checked here (includes/fence.lua).
  await t.redis.hset(t.keys(q2).meta, 'vr', 'another-run-id');
  expect(await runReady(q1)).toEqual([id.a]);
  // The move of d answers "fenced", not "nothing to move": a's outcome stays in flight.
  await expect(advanceFlows(t.stores.flows, [q1])).rejects.toMatchObject({ code: 'unavailable' });
  expect(await status(q2, id.d)).toBe('blocked');
  // The watch checks q2; once the lease of a's entry ran out the pass carries the move out.
  await t.redis.hdel(t.keys(q2).meta, 'vr');
  await sleep(FLOW_LEASE_MS + 200);
  await advanceFlows(t.stores.flows, [q1]);
  expect(await status(q2, id.d)).toBe('waiting');
  expect((await events(q2, id.d)).filter((e) => e.e === 'unblocked')).toHaveLength(1);
});
