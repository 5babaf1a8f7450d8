/**
 * DLQ retries in flows with more than one failed dependency (lua/advanceFlow-1.lua
 * 'reblock'), over real Redis: a dependent cancelled by the policy stays
 * cancelled while another of its dependencies is still failed or cancelled.
 */
import { advanceFlows } from '../../../src/flows/flow-worker';
import { openStore, TestStore } from '../../support/redis';
import { expectLegal, scriptHelpers } from '../../support/scripts';
import { FlowSpec, runReady as ready, submitFlow } from '../../support/flows';

let t: TestStore;
beforeAll(async () => {
  t = await openStore('flowretryedges');
});
afterAll(async () => {
  await t.close();
});
const { newQueue, raw, events } = scriptHelpers(() => t, 'flowretryedges');
const submit = (specs: FlowSpec[]) => submitFlow(t, specs);
const status = async (q: string, id: string) => (await raw(q, id)).s;

const runReady = (q: string, fail?: Set<string>) => ready(t, q, fail);
const settle = async () => {
  while ((await advanceFlows(t.stores.flows)) > 0);
};

it('two failed dependencies: retrying one leaves the dependent cancelled (the other still failed); retrying both brings it back and it runs once', async () => {
  const q = newQueue();
  const { id } = await submit([{ ref: 'a', queue: q }, { ref: 'b', queue: q }, { ref: 'c', queue: q, deps: ['a', 'b'] }, { ref: 'e', queue: q, deps: ['c'] }]);
  expect(await runReady(q, new Set([id.a, id.b]))).toEqual([id.a, id.b].sort());
  await settle();
  expect([await status(q, id.c), await status(q, id.e)]).toEqual(['cancelled', 'cancelled']);
  await t.stores.deadLetters.retry(q, id.a);
  await settle();
  // b is still failed: c must stay cancelled (not blocked for good), and so must e.
  expect([await status(q, id.c), await status(q, id.e)]).toEqual(['cancelled', 'cancelled']);
  expect(await runReady(q)).toEqual([id.a]);
  await settle();
  expect(await status(q, id.c)).toBe('cancelled');
  // Retrying b now brings c (and e) back; they run in order.
  await t.stores.deadLetters.retry(q, id.b);
  await settle();
  expect([await status(q, id.c), await status(q, id.e)]).toEqual(['blocked', 'blocked']);
  expect(await runReady(q)).toEqual([id.b]);
  await settle();
  expect(await runReady(q)).toEqual([id.c]);
  await settle();
  expect(await runReady(q)).toEqual([id.e]);
  await settle();
  expect(await t.redis.hmget(`${t.prefix}:{flow:${(await raw(q, id.c)).fl}}:meta`, 'nc', 'nx')).toEqual(['4', '0']);
  expect((await events(q, id.c)).filter((e) => e.e === 'unblocked')).toHaveLength(1);
  expectLegal(await events(q));
});

it('a dependent cancelled for one dependency, another cancelled by hand later: retrying the failed one leaves it cancelled', async () => {
  const q = newQueue();
  const { id } = await submit([{ ref: 'a', queue: q }, { ref: 'b', queue: q, deps: ['a'] }, { ref: 'x', queue: q }, { ref: 'c', queue: q, deps: ['b', 'x'] }]);
  // x runs later: cancelled by hand while waiting.
  await t.store.cancel(q, id.x);
  await settle();
  expect(await status(q, id.c)).toBe('cancelled');
  expect(await runReady(q, new Set([id.a]))).toEqual([id.a]);
  await settle();
  expect(await status(q, id.b)).toBe('cancelled');
  await t.stores.deadLetters.retry(q, id.a);
  await settle();
  // b comes back (its only dependency retried); c does not (x is cancelled).
  expect([await status(q, id.b), await status(q, id.c)]).toEqual(['blocked', 'cancelled']);
  expect(await runReady(q)).toEqual([id.a]);
  await settle();
  expect(await runReady(q)).toEqual([id.b]);
  await settle();
  expect(await status(q, id.c)).toBe('cancelled');
  expectLegal(await events(q));
});

it('a DLQ retry applied before the cascade cancellation it raced with (another queue) still brings the dependent back, once', async () => {
  const [q1, q2] = [newQueue(), newQueue()];
  const { id } = await submit([{ ref: 'a', queue: q1 }, { ref: 'b', queue: q2, deps: ['a'] }]);
  expect(await runReady(q1, new Set([id.a]))).toEqual([id.a]);
  await advanceFlows(t.stores.flows, [q1]); // a's failure: b cancelled, its entry in q2's outbox
  expect(await status(q2, id.b)).toBe('cancelled');
  await t.stores.deadLetters.retry(q1, id.a);
  await advanceFlows(t.stores.flows, [q1]); // the retry applied before b's cancellation
  await settle();
  expect(await status(q2, id.b)).toBe('blocked');
  expect(await runReady(q1)).toEqual([id.a]);
  await settle();
  expect(await status(q2, id.b)).toBe('waiting');
  expect(await runReady(q2)).toEqual([id.b]);
  await settle();
  expect((await events(q2, id.b)).map((e) => e.e)).toEqual(['enqueued', 'cancelled', 'blocked', 'unblocked', 'claimed', 'completed']);
  expect(await t.redis.hmget(`${t.prefix}:{flow:${(await raw(q2, id.b)).fl}}:meta`, 'nc', 'nx')).toEqual(['2', '0']);
  for (const q of [q1, q2]) expectLegal(await events(q));
});

it('a dependency failed and retried three times: the dependents are cancelled and brought back each time, released once at the end', async () => {
  const [q1, q2] = [newQueue(), newQueue()];
  const { id } = await submit([{ ref: 'a', queue: q1 }, { ref: 'b', queue: q2, deps: ['a'] }, { ref: 'r', queue: q2, deps: ['a'], run: true }, { ref: 'c', queue: q1, deps: ['b', 'r'] }]);
  for (let round = 0; round < 3; round++) {
    expect(await runReady(q1, new Set([id.a]))).toEqual([id.a]);
    await settle();
    expect([await status(q2, id.b), await status(q1, id.c)]).toEqual(['cancelled', 'cancelled']);
    if (round === 0) {
      expect(await status(q2, id.r)).toBe('waiting'); // the "run" dependent runs after the first failure
      expect(await runReady(q2)).toEqual([id.r]);
      await settle();
    }
    await t.stores.deadLetters.retry(q1, id.a);
    await settle();
    expect([await status(q2, id.b), await status(q1, id.c)]).toEqual(['blocked', 'blocked']);
  }
  expect(await runReady(q1)).toEqual([id.a]);
  await settle();
  expect(await runReady(q2)).toEqual([id.b]);
  await settle();
  expect(await runReady(q1)).toEqual([id.c]);
  await settle();
  for (const [q, ref] of [[q2, 'b'], [q1, 'c'], [q2, 'r']] as const) {
    expect((await events(q, id[ref])).filter((e) => e.e === 'unblocked')).toHaveLength(1);
  }
  expect(await t.redis.hmget(`${t.prefix}:{flow:${(await raw(q1, id.c)).fl}}:meta`, 'nc', 'nx')).toEqual(['4', '0']);
  for (const q of [q1, q2]) expectLegal(await events(q));
});

it('a reblock on a fenced queue (not checked since Redis restarted) moves nothing and answers so, without throwing', async () => {
  const q = newQueue();
  const { id } = await submit([{ ref: 'a', queue: q }, { ref: 'b', queue: q, deps: ['a'] }]);
  expect(await runReady(q, new Set([id.a]))).toEqual([id.a]);
  await settle();
  expect(await status(q, id.b)).toBe('cancelled');
  await t.redis.hset(t.keys(q).meta, 'vr', 'f'.repeat(40));
  expect(await t.stores.flows.reblock(q, [id.b])).toEqual({ moved: [], at: '' });
  expect(await status(q, id.b)).toBe('cancelled');
  await t.redis.hdel(t.keys(q).meta, 'vr');
  const r = await t.stores.flows.reblock(q, [id.b]);
  expect([r.moved, r.at]).toEqual([[id.b], expect.stringMatching(/^\d{16,17}$/)]);
});
