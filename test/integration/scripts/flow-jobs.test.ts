/**
 * Flow jobs in their queue (lua/enqueueJobs-5.lua field 14, lua/moveFlowJobs-7.lua;
 * docs/workflows.md) on real Redis: created blocked (not claimable, not
 * waiting), unblocked to waiting or to delayed until their own runAt, cancelled
 * for a failed dependency with an outbox entry for the cascade, blocked again
 * after a DLQ retry; every move acts once.
 */
import { randomUUID } from 'node:crypto';
import type { NormalizedEnqueue } from '../../../src/core/job-options';
import { openStore, TestStore } from '../../support/redis';
import { expectLegal, scriptHelpers } from '../../support/scripts';

let t: TestStore;
beforeAll(async () => {
  t = await openStore('flowjobs');
});
afterAll(async () => {
  await t.close();
});
const { newQueue, norm, raw, events } = scriptHelpers(() => t, 'flowjobs');

const flowJob = (q: string, flowId: string, ref: string, extra: Partial<NormalizedEnqueue> = {}, deps: { ref: string; id: string; queue: string }[] = []): NormalizedEnqueue => ({
  ...norm(q, { payload: { ref } }),
  ...extra,
  flow: { flowId, jobId: randomUUID(), ref, onDependencyFailure: 'cancel', dependsOn: deps },
});

it('a flow job is created blocked: not waiting, not claimable; its hash and enqueued event carry the flow', async () => {
  const q = newQueue();
  const k = t.keys(q);
  const j = flowJob(q, 'F1', 'a', {}, [{ ref: 'z', id: 'zid', queue: 'other' }]);
  const [r] = await t.store.enqueue([j]);
  expect([r.id, r.status]).toEqual([j.flow!.jobId, 'blocked']);
  expect(await t.redis.zscore(k.blocked, r.id)).not.toBeNull();
  expect(await t.redis.zcard(k.waiting)).toBe(0);
  expect((await t.store.claim(q, 10, 30_000, 'w')).jobs).toEqual([]);
  expect(await raw(q, r.id)).toMatchObject({ s: 'blocked', fl: 'F1', fp: 'c', rf: 'a', dp: JSON.stringify([{ ref: 'z', id: 'zid', queue: 'other' }]) });
  const [ev] = await events(q, r.id);
  expect(ev).toMatchObject({ e: 'enqueued', t: 'blocked', fl: 'F1', rf: 'a' });
});

it('unblock: waiting (claimable, through its key) or delayed until its own runAt; a repeat moves nothing', async () => {
  const q = newQueue();
  const k = t.keys(q);
  const [now, later, keyed] = await t.store.enqueue([flowJob(q, 'F2', 'now'), flowJob(q, 'F2', 'later', { delayMs: 60_000 }), flowJob(q, 'F2', 'keyed', { concurrencyKey: 'cust-1' })]);
  expect(await t.stores.flows.move(q, 'unblock', [now.id, later.id, keyed.id])).toEqual([now.id, later.id, keyed.id]);
  expect(await t.stores.flows.move(q, 'unblock', [now.id, later.id, keyed.id])).toEqual([]);
  expect((await raw(q, now.id)).s).toBe('waiting');
  expect((await raw(q, later.id)).s).toBe('delayed');
  expect(await t.redis.zscore(k.delayed, later.id)).toBe((await raw(q, later.id)).ra);
  expect(await t.redis.zcard(k.blocked)).toBe(0);
  const c = await t.store.claim(q, 10, 30_000, 'w');
  expect(c.jobs.map((x) => x.id).sort()).toEqual([now.id, keyed.id].sort());
  expect((await events(q, now.id)).map((e) => `${e.e}:${e.f}>${e.t}`)).toEqual(['enqueued:>blocked', 'unblocked:blocked>waiting', 'claimed:waiting>active']);
  expect((await events(q, later.id)).map((e) => `${e.e}:${e.f}>${e.t}`)).toEqual(['enqueued:>blocked', 'unblocked:blocked>delayed']);
  expectLegal(await events(q));
});

it('cancel for a failed dependency writes the outbox entry of the cascade; reblock brings it back; repeats move nothing', async () => {
  const q = newQueue();
  const k = t.keys(q);
  const [j] = await t.store.enqueue([flowJob(q, 'F3', 'b')]);
  // Blocked already: answered as moved, no event.
  expect(await t.stores.flows.move(q, 'reblock', [j.id])).toEqual([j.id]);
  expect(await t.stores.flows.move(q, 'cancel', [j.id])).toEqual([j.id]);
  expect(await t.stores.flows.move(q, 'cancel', [j.id])).toEqual([]);
  expect(await raw(q, j.id)).toMatchObject({ s: 'cancelled', cx: 'dependency_failed' });
  expect(await t.redis.lrange(k.flowOutbox, 0, -1)).toEqual([expect.stringMatching(new RegExp(`^F3\\|${j.id}\\|x\\|1\\|\\d{16}$`))]);
  expect(await t.stores.flows.move(q, 'reblock', [j.id])).toEqual([j.id]);
  // A repeat answers it as moved (the worker goes on down the graph) and writes no second event.
  expect(await t.stores.flows.move(q, 'reblock', [j.id])).toEqual([j.id]);
  expect((await raw(q, j.id)).s).toBe('blocked');
  expect((await raw(q, j.id)).cx).toBeUndefined();
  expect(await t.redis.zscore(k.blocked, j.id)).not.toBeNull();
  expect((await events(q, j.id)).map((e) => `${e.e}:${e.f}>${e.t}:${e.r ?? ''}`)).toEqual([
    'enqueued:>blocked:', 'cancelled:blocked>cancelled:dependency_failed', 'blocked:cancelled>blocked:dependency_retried',
  ]);
  // A job a client cancelled is not brought back by a dependency's retry.
  await t.stores.flows.move(q, 'unblock', [j.id]);
  await t.store.cancel(q, j.id);
  expect(await t.stores.flows.move(q, 'reblock', [j.id])).toEqual([]);
  expectLegal(await events(q));
});

it('a client cancels a blocked job (DELETE /jobs/:id): cancelled, its outcome in the flow outbox', async () => {
  const q = newQueue();
  const k = t.keys(q);
  const [j] = await t.store.enqueue([flowJob(q, 'F4', 'c')]);
  expect(await t.store.cancel(q, j.id)).toBe('cancelled');
  expect((await raw(q, j.id)).s).toBe('cancelled');
  expect(await t.redis.zcard(k.blocked)).toBe(0);
  expect(await t.redis.lrange(k.flowOutbox, 0, -1)).toEqual([expect.stringMatching(new RegExp(`^F4\\|${j.id}\\|x\\|1\\|\\d{16}$`))]);
  expectLegal(await events(q));
});

it('a malformed flow field is refused before anything is written', async () => {
  const q = newQueue();
  const k = t.keys(q);
  const args = [k.base, 3, '', 1000, 1000, 1, 1, 'id-x', 't', '{}', 0, '', 0, '', '', '', '', '', '', '', 'F\nq\nref\n[]'];
  await expect(t.scripts.run('enqueueJobs', [k.waiting, k.delayed, k.events, k.wake, k.meta], args)).rejects.toThrow(/malformed flow/);
  expect(await t.redis.exists(`${k.base}job:id-x`)).toBe(0);
});
