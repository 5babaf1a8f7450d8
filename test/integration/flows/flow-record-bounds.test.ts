/**
 * The largest graph POST /flows accepts (1,000 jobs, each depending on every
 * job before it: 499,500 edges) must not hold Redis: lua/recordFlow-1.lua
 * built each job's dependents by appending to a string (a copy per edge,
 * cubic in total): 20 s of a blocked Redis for every client of it; and
 * lua/restoreFlow-1.lua rebuilt a lost record the same way.
 */
import { randomUUID } from 'node:crypto';
import Redis from 'ioredis';
import { flowKeyBase } from '../../../src/redis/stores/flow-record';
import { openStore, REDIS_URL, TestStore } from '../../support/redis';

let t: TestStore;
beforeAll(async () => {
  t = await openStore('flowrecbounds');
});
afterAll(async () => {
  await t.close();
});

/** Runs `work` and PINGs Redis from another connection while it runs: the PING's answer time, ms. */
async function pingDuring<T>(work: () => Promise<T>): Promise<{ result: T; pingMs: number }> {
  const other = new Redis(REDIS_URL);
  try {
    await other.ping();
    const running = work();
    await new Promise((r) => setTimeout(r, 300)); // the script is running (the arguments alone take a moment)
    const t0 = Date.now();
    await other.ping();
    const pingMs = Date.now() - t0;
    return { result: await running, pingMs };
  } finally {
    other.disconnect();
  }
}

it('rebuilding a lost complete 1,000-job DAG (the restore) leaves Redis answering, and the record is right', async () => {
  const ids = Array.from({ length: 1000 }, () => randomUUID());
  const flowId = randomUUID();
  const { result, pingMs } = await pingDuring(() =>
    t.stores.flowRestore.rebuild(
      flowId,
      'default',
      Date.now(),
      ids.map((id, i) => ({ id, queue: 'q', onDependencyFailure: 'cancel' as const, dependsOn: ids.slice(0, i), ref: `r${i}`, outcome: i === 0 ? ('completed' as const) : null, authoritative: true })),
    ),
  );
  expect(pingMs).toBeLessThan(5000);
  expect(result).toMatchObject({ created: true, applied: 1, release: [{ queue: 'q', id: ids[1] }], cancel: [] });
  const base = flowKeyBase(t.prefix, flowId);
  expect((await t.redis.hget(base + 'dnts', ids[0]))!.split(',')).toEqual(ids.slice(1));
  expect(await t.redis.hget(base + 'left', ids[999])).toBe('998');
});

it('recording a complete 1,000-job DAG leaves Redis answering other clients within seconds, and the record is right', async () => {
  const ids = Array.from({ length: 1000 }, () => randomUUID());
  const flowId = randomUUID();
  const other = new Redis(REDIS_URL);
  try {
    await other.ping();
    const recording = t.stores.flows.record(
      flowId,
      'default',
      ids.map((id, i) => ({ id, queue: 'q', onDependencyFailure: 'cancel' as const, dependsOn: ids.slice(0, i), ref: `r${i}` })),
    );
    await new Promise((r) => setTimeout(r, 300)); // the script is running (the arguments alone take a moment)
    const t0 = Date.now();
    await other.ping();
    const pingMs = Date.now() - t0;
    expect(await recording).toBe(true);
    expect(pingMs).toBeLessThan(5000);
  } finally {
    other.disconnect();
  }
  const base = flowKeyBase(t.prefix, flowId);
  expect((await t.redis.hget(base + 'dnts', ids[0]))!.split(',')).toEqual(ids.slice(1));
  expect((await t.redis.hget(base + 'dnts', ids[998]))!.split(',')).toEqual([ids[999]]);
  expect(await t.redis.hget(base + 'dnts', ids[999])).toBeNull();
  expect(await t.redis.hget(base + 'left', ids[999])).toBe('999');
});
