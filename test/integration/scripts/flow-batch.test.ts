/**
 * advanceFlow with many outcomes in one step (lua/advanceFlow-1.lua, the flow
 * worker's batch of one flow's outbox entries) on real Redis: over seeded
 * random DAGs and random outcome sequences (repeats and DLQ retries
 * included), applying in batches leaves the record exactly as applying one at
 * a time does and releases/cancels the same jobs; a 1,000-child fan-in in one
 * step releases its parent once; the outbox's take acknowledges the previous
 * batch in the same step.
 */
import type { FlowAdvance, FlowOutcome, FlowRecordJob } from '../../../src/core/ports/flows';
import { flowKeyBase } from '../../../src/redis/stores/flow-record';
import { openStore, TestStore } from '../../support/redis';
import { rng } from '../../support/rng';
import { scriptHelpers } from '../../support/scripts';
import { submitFlow } from '../../support/flows';

let t: TestStore;
beforeAll(async () => {
  t = await openStore('flowbatch');
});
afterAll(async () => {
  await t.close();
});
const { newQueue } = scriptHelpers(() => t, 'flowbatch');

/** A random DAG of `n` jobs: each depends on up to 3 earlier ones; a third run on failure. */
function randomGraph(rand: () => number, n: number): FlowRecordJob[] {
  return Array.from({ length: n }, (_, i) => {
    const deps = new Set<string>();
    for (let k = 0; k < 3 && i > 0; k++) if (rand() < 0.6) deps.add(`j${Math.floor(rand() * i)}`);
    return { id: `j${i}`, queue: i % 2 ? 'qa' : 'qb', dependsOn: [...deps], onDependencyFailure: rand() < 0.33 ? 'run' : 'cancel' };
  });
}

/**
 * Outcomes as the outboxes would carry them: most jobs end once ('c' or 'x'),
 * some twice (a redelivery), a failure sometimes retried; a fifth never end
 * (so the jobs a step releases or cancels are still there to compare).
 */
function randomOutcomes(rand: () => number, jobs: FlowRecordJob[]): { jobId: string; outcome: FlowOutcome }[] {
  const out: { jobId: string; outcome: FlowOutcome }[] = [];
  for (const j of [...jobs].sort(() => rand() - 0.5)) {
    if (rand() < 0.2) continue;
    const outcome: FlowOutcome = rand() < 0.75 ? 'completed' : 'ended';
    out.push({ jobId: j.id, outcome });
    if (rand() < 0.15) out.push({ jobId: j.id, outcome });
    if (outcome === 'ended' && rand() < 0.3) out.push({ jobId: j.id, outcome: 'retried' }, { jobId: j.id, outcome: 'completed' });
  }
  out.push({ jobId: 'not-of-this-flow', outcome: 'completed' });
  return out;
}

const record = async (flow: string) => {
  const base = flowKeyBase(t.prefix, flow);
  const [out, left, meta] = await Promise.all([t.redis.hgetall(base + 'out'), t.redis.hgetall(base + 'left'), t.redis.hmget(base + 'meta', 'nc', 'nx')]);
  return { out, left, meta };
};

/** Jobs each list named, among those still without an outcome at the end (what a move would act on). */
function decided(advs: FlowAdvance[], out: Record<string, string>) {
  const pick = (k: keyof FlowAdvance) => [...new Set(advs.flatMap((a) => a[k].map((r) => r.id)))].filter((id) => !out[id]).sort();
  return { release: pick('release'), cancel: pick('cancel') };
}

it('over 40 random DAGs, batches leave the record as one-at-a-time does and decide the same moves', async () => {
  let listedAtAll = 0;
  for (let seed = 1; seed <= 40; seed++) {
    const rand = rng(seed);
    const jobs = randomGraph(rand, 5 + Math.floor(rand() * 40));
    const outcomes = randomOutcomes(rand, jobs);
    const [one, many] = [`one-${seed}-${Date.now()}`, `many-${seed}-${Date.now()}`];
    await t.stores.flows.record(one, 'default', jobs);
    await t.stores.flows.record(many, 'default', jobs);

    const seq: FlowAdvance[] = [];
    for (const o of outcomes) seq.push(await t.stores.flows.advance(one, o.jobId, o.outcome));
    // In batches of random sizes; a retry goes alone, as the flow worker sends it.
    const batched: FlowAdvance[] = [];
    let chunk: typeof outcomes = [];
    const flush = async () => {
      if (chunk.length) batched.push(await t.stores.flows.advanceMany(many, chunk));
      chunk = [];
    };
    for (const o of outcomes) {
      if (o.outcome === 'retried') {
        await flush();
        batched.push(await t.stores.flows.advanceMany(many, [o]));
      } else {
        chunk.push(o);
        if (rand() < 0.2) await flush();
      }
    }
    await flush();

    const [a, b] = [await record(one), await record(many)];
    expect({ seed, ...b }).toEqual({ seed, ...a });
    const moves = decided(seq, a.out);
    expect({ seed, ...decided(batched, b.out) }).toEqual({ seed, ...moves });
    listedAtAll += moves.release.length + moves.cancel.length;
  }
  expect(listedAtAll).toBeGreaterThan(40); // the comparison above had something to compare
});

it('a 1,000-child fan-in in one step releases its parent once; the same step again answers the same and moves nothing', async () => {
  const f = `fan-${Date.now()}`;
  const kids = Array.from({ length: 1000 }, (_, i) => `k${i}`);
  await t.stores.flows.record(f, 'default', [...kids.map((id) => ({ id, queue: 'kids', dependsOn: [], onDependencyFailure: 'cancel' as const })), { id: 'p', queue: 'top', dependsOn: kids, onDependencyFailure: 'cancel' }]);
  const first = await t.stores.flows.advanceMany(f, kids.slice(0, 999).map((jobId) => ({ jobId, outcome: 'completed' as const })));
  expect(first.release).toEqual([]);
  const all = kids.map((jobId) => ({ jobId, outcome: 'completed' as const }));
  expect((await t.stores.flows.advanceMany(f, all)).release).toEqual([{ queue: 'top', id: 'p' }]);
  expect((await t.stores.flows.advanceMany(f, all)).release).toEqual([{ queue: 'top', id: 'p' }]);
  expect((await record(f)).left.p).toBe('0');
  expect((await record(f)).meta).toEqual(['1000', '0']);
  await expect(t.stores.flows.advanceMany(f, [])).rejects.toThrow(RangeError);
  await expect(t.stores.flows.advanceMany(f, [...all, { jobId: 'p', outcome: 'completed' }])).rejects.toThrow(RangeError);
});

it("the outbox's take acknowledges the caller's previous batch in the same step", async () => {
  const q = newQueue();
  const { id } = await submitFlow(t, [{ ref: 'a', queue: q }, { ref: 'b', queue: q }, { ref: 'c', queue: q, deps: ['a', 'b'] }]);
  const c = await t.store.claim(q, 10, 30_000, 'w');
  await t.store.complete(q, 'w', c.jobs.map((j) => ({ id: j.id, lockToken: j.lockToken, result: null })));
  const taken = await t.stores.flows.take(q, 1, 30_000);
  expect(taken.map((e) => e.jobId)).toHaveLength(1);
  const next = await t.stores.flows.take(q, 1, 30_000, taken.map((e) => e.raw));
  expect(await t.redis.zrange(t.keys(q).flowInFlight, 0, -1)).toEqual(next.map((e) => e.raw));
  expect([...taken, ...next].map((e) => e.jobId).sort()).toEqual([id.a, id.b].sort());
  expect(await t.stores.flows.take(q, 0, 30_000, next.map((e) => e.raw))).toEqual([]);
  expect(await t.redis.zcard(t.keys(q).flowInFlight)).toBe(0);
});
