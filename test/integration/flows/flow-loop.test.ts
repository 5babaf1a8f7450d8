/**
 * The flow worker's schedule (src/flows/flow-loop.ts) on real Redis: an
 * outcome landing in an empty flow outbox wakes it over pub/sub
 * (lua/includes/flowout.lua), so a dependent is released without waiting for
 * the periodic sweep (here an hour away); the last batch's acknowledgement
 * is held for the next step and sent on stop.
 */
import { FlowWorkerLoop } from '../../../src/flows/flow-loop';
import { openStore, sleep, TestStore } from '../../support/redis';
import { scriptHelpers } from '../../support/scripts';
import { submitFlow } from '../../support/flows';

let t: TestStore;
beforeAll(async () => {
  t = await openStore('flowloop');
});
afterAll(async () => {
  await t.close();
});
const { newQueue, raw } = scriptHelpers(() => t, 'flowloop');

async function completeAll(q: string): Promise<string[]> {
  const c = await t.store.claim(q, 10, 30_000, 'w');
  await t.store.complete(q, 'w', c.jobs.map((j) => ({ id: j.id, lockToken: j.lockToken, result: null })));
  return c.jobs.map((j) => j.id);
}

it('a completion wakes the flow worker: the dependent is released within a second, not at the next sweep', async () => {
  const [q1, q2] = [newQueue(), newQueue()];
  const { id } = await submitFlow(t, [{ ref: 'a', queue: q1 }, { ref: 'b', queue: q2, deps: ['a'] }, { ref: 'c', queue: q1, deps: ['b'] }]);
  const errors: unknown[] = [];
  const loop = new FlowWorkerLoop(t.stores.flows, (e) => errors.push(e), 3_600_000);
  await loop.start();
  try {
    await sleep(100); // the first sweep has run: from now on only wake-ups
    for (const [q, ref, next, nq] of [[q1, 'a', 'b', q2], [q2, 'b', 'c', q1]] as const) {
      expect(await completeAll(q)).toEqual([id[ref]]);
      const t0 = Date.now();
      while ((await raw(nq, id[next])).s === 'blocked' && Date.now() - t0 < 1000) await sleep(5);
      expect({ next, status: (await raw(nq, id[next])).s }).toEqual({ next, status: 'waiting' });
    }
    // The last batch's acknowledgement waits for the queue's next step.
    expect(await t.redis.zcard(t.keys(q2).flowInFlight)).toBe(1);
  } finally {
    await loop.stop();
  }
  expect(await t.redis.zcard(t.keys(q2).flowInFlight)).toBe(0);
  expect(errors).toEqual([]);
});
