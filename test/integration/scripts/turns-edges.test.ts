/**
 * Turns mode's edges (flow control per key, lua/includes/lanes.lua), found by
 * a review and fixed: each test reproduces one problem on real Redis through
 * the stores, and failed on the code before its fix (9b2eba1). The comment
 * above each group says what went wrong then ("before the fix").
 */
import type { ClaimedJob } from '../../../src/core/job';
import { openStore, TestStore } from '../../support/redis';
import { laneHelpers } from '../../support/lanes';

let t: TestStore;
beforeAll(async () => {
  t = await openStore('turnsbreak');
});
afterAll(async () => {
  jest.restoreAllMocks();
  await t.close();
});

const { newQueue, enqKeyed, keyOf, claim } = laneHelpers(() => t, 'turnsbreak');

/** The real waiting + active jobs per key, and what the counts index (kcnt) says. */
async function counts(q: string): Promise<{ real: Record<string, number>; kcnt: Record<string, number> }> {
  const k = t.keys(q);
  const ids = [...(await t.redis.zrange(k.waiting, 0, -1)), ...(await t.redis.zrange(k.active, 0, -1))];
  const real: Record<string, number> = {};
  for (const id of ids) {
    const ck = await t.redis.hget(`${k.base}job:${id}`, 'ck');
    if (ck) real[ck] = (real[ck] ?? 0) + 1;
  }
  const z = await t.redis.zrange(`${k.base}kcnt`, 0, -1, 'WITHSCORES');
  const kcnt: Record<string, number> = {};
  for (let i = 0; i < z.length; i += 2) kcnt[z[i]] = -Number(z[i + 1]);
  return { real, kcnt };
}

/** Claims one job at a time until `id` comes; returns its position (0-based) among the claims. */
async function positionOf(q: string, id: string, max: number): Promise<number> {
  for (let i = 0; i < max; i++) {
    const c = await claim(q, 1);
    if (!c.jobs.length) return -1;
    if (c.jobs[0].id === id) return i;
  }
  return -1;
}

describe('turns mode: fairness', () => {
  // Before the fix: lua/claimJobs-8.lua records kv (the base turn for an empty waiting set)
  // only when a claim pops FEWER entries than it asked for and at least one.
  // A worker claiming one job at a time (or a last batch that fits exactly)
  // never does: kv stays 0, and after the queue drains a new key's backlog
  // takes turns 0.. while a key with a job still active keeps its high last
  // turn (kturn): that key's next job waits behind the new key's whole backlog.
  it('single-job claims never record kv: after a drain, a key that still runs a job waits behind a new key\'s whole backlog', async () => {
    const q = newQueue();
    const k = t.keys(q);
    await enqKeyed(q, 'A', 100);
    expect(await t.redis.hget(k.meta, 'km')).toBe('t');
    for (let i = 0; i < 100; i++) expect((await claim(q, 1)).jobs).toHaveLength(1);
    expect((await claim(q, 1)).jobs).toHaveLength(0);
    // 100 turns were served; the doc says kv = the last claimed turn.
    expect(Number(await t.redis.hget(k.meta, 'kv'))).toBeGreaterThanOrEqual(99);
  });

  it('(same root cause, observable) key A\'s next job is claimed within the first turns, not after all 20 of key B', async () => {
    const q = newQueue();
    await enqKeyed(q, 'A', 100);
    for (let i = 0; i < 100; i++) await claim(q, 1); // A's jobs stay active (a long batch)
    await enqKeyed(q, 'B', 20);
    const [x] = await enqKeyed(q, 'A', 1);
    // Round robin: B, A, B, ... — A's job is among the first 3 claims.
    const pos = await positionOf(q, x, 30);
    expect(pos).toBeGreaterThanOrEqual(0);
    expect(pos).toBeLessThan(3);
  });

  // Before the fix: Unkeyed jobs have no counts entry, so countDown never drops kturn['']:
  // turns reserved by unkeyed jobs that were cancelled stay reserved for
  // good, and the next unkeyed job queues behind every other key's backlog.
  // (A key behaves the same while one of its jobs is active.)
  it('cancelled unkeyed jobs keep their turns reserved: the next unkeyed job waits behind a new key\'s whole backlog', async () => {
    const q = newQueue();
    const k = t.keys(q);
    await enqKeyed(q, 'Z', 1);
    expect(await t.redis.hget(k.meta, 'km')).toBe('t');
    expect((await claim(q, 5)).jobs).toHaveLength(1); // drained: kv recorded
    const plain = await enqKeyed(q, undefined, 100);
    for (const id of plain) await t.store.cancel(q, id);
    expect(await t.redis.zcard(k.waiting)).toBe(0);
    await enqKeyed(q, 'B', 20);
    const [u] = await enqKeyed(q, undefined, 1);
    // No unkeyed job is waiting or active: it is a newcomer like any key, one of the next turns.
    const pos = await positionOf(q, u, 30);
    expect(pos).toBeGreaterThanOrEqual(0);
    expect(pos).toBeLessThan(3);
  });

  // A keyed backlog cancelled while one of the key's jobs still runs keeps
  // its turns until that job ends (documented in docs/flow-control.md: the
  // key's count reaches zero then, and its last turn goes); from then on the
  // key starts from the turn served now.
  it('a key whose backlog was cancelled starts afresh once its running job ends', async () => {
    const q = newQueue();
    const a = await enqKeyed(q, 'A', 101);
    const [running] = (await claim(q, 1)).jobs;
    expect(running.id).toBe(a[0]);
    for (const id of a.slice(1)) await t.store.cancel(q, id);
    await t.store.complete(q, 'w1', [{ id: running.id, lockToken: running.lockToken, result: null }]);
    await enqKeyed(q, 'B', 20);
    const [x] = await enqKeyed(q, 'A', 1);
    const pos = await positionOf(q, x, 30);
    expect(pos).toBeGreaterThanOrEqual(0);
    expect(pos).toBeLessThan(3);
  });
});

describe('turns mode: corrupt turn values', () => {
  // Before the fix: lanes.lua turnReady reads the key's last turn with a bare tonumber():
  // Redis' Lua parses 'nan' (and 'inf'). nan + 1 is nan, math.max(nan, v) is
  // nan, turnScore clamps nan to turn 0, and HSET stores 'nan' back: every
  // job of that key takes turn 0, at the head, for good.
  it('kturn = "nan" (hand-edited) is read as no last turn: the key does not take every turn', async () => {
    const q = newQueue();
    const k = t.keys(q);
    await enqKeyed(q, 'A', 1);
    await claim(q, 1); // A keeps one job active, so its kturn entry stays
    await enqKeyed(q, 'B', 50);
    await t.redis.hset(`${k.base}kturn`, 'A', 'nan');
    await enqKeyed(q, 'A', 10);
    const first = await claim(q, 10);
    const keys = await Promise.all(first.jobs.map((j) => keyOf(q, j.id)));
    // Fair: A and B alternate. Not all ten taken by A.
    expect(keys.filter((x) => x === 'A').length).toBeLessThanOrEqual(6);
  });

  // Before the fix: A last turn of 'inf' (or anything past 2^44) is clamped to TURN_MAX in the
  // score but kept in kturn; once the waiting head is at TURN_MAX every new
  // job of every key gets TURN_MAX (max(last + 1, head)), the drain records
  // kv = TURN_MAX, and from then on every job ties: plain FIFO, no fairness,
  // and nothing ever brings the turns back down.
  it('a turn saturated at TURN_MAX (kturn = "inf") moves the queue to lanes: fair shares again once the move is done', async () => {
    const q = newQueue();
    const k = t.keys(q);
    await enqKeyed(q, 'A', 1);
    await claim(q, 1);
    await t.redis.hset(`${k.base}kturn`, 'A', 'inf');
    const held = (await claim(q, 5)).jobs;
    await enqKeyed(q, 'A', 1);
    expect((await claim(q, 5)).jobs).toHaveLength(1); // drained: kv recorded
    held.push(...(await claim(q, 5)).jobs);
    // Key A is gone (its jobs completed): its kturn entry goes.
    const act = await t.redis.zrange(k.active, 0, -1);
    for (const id of act) {
      const tok = await t.redis.hget(`${k.base}job:${id}`, 'lt');
      await t.store.complete(q, 'w1', [{ id, lockToken: tok!, result: null }]);
    }
    // A turn at TURN_MAX starts the move to lanes, which the maintenance
    // pass finishes (src/maintenance/lanes.ts): fair shares again.
    expect(await t.redis.hget(k.meta, 'kmig')).toBe('1');
    expect(await t.stores.queues.finishLaneMove(q)).toBe(true);
    // New keys: 30 of C, then 3 of D: D's jobs should be in the next turns.
    await enqKeyed(q, 'C', 30);
    const d = new Set(await enqKeyed(q, 'D', 3));
    const order = (await claim(q, 10)).jobs.map((j) => j.id);
    expect(order.filter((id) => d.has(id))).toHaveLength(3);
  });
});

describe('turns -> lanes: jobs claimed while the move runs (kmig)', () => {
  // Before the fix: A job claimed on the plain path while kmig is set stays in its lane
  // (stale). After the move, when it comes back to waiting (retry, release,
  // expired lease) laneAdd's ZADD finds it already there (returns 0) and does
  // not count it, while slotFree counted it down: kcnt loses one per such job.
  it('a job claimed during the move and retried after it: the counts index loses it', async () => {
    const q = newQueue();
    const k = t.keys(q);
    await enqKeyed(q, 'A', 1);
    const [hi] = await enqKeyed(q, 'A', 1, { priority: 5, maxAttempts: 3 });
    expect(await t.redis.hget(k.meta, 'kmig')).toBe('1');
    const c = await claim(q, 1); // the priority-5 job: claimed while kmig is set
    expect(c.jobs.map((j) => j.id)).toEqual([hi]);
    expect(await t.stores.queues.finishLaneMove(q)).toBe(true);
    expect(await t.redis.hget(k.meta, 'km')).toBe('1');
    await t.store.fail(q, hi, c.jobs[0].lockToken, { error: 'e', retryable: true, delayMs: 0, reason: 'error', workerId: 'w1' });
    const { real, kcnt } = await counts(q);
    expect(real).toEqual({ A: 2 });
    expect(kcnt).toEqual(real);
  });

  it('(same root cause, observable) GET keys stops listing a key that still has a waiting job', async () => {
    const q = newQueue();
    await enqKeyed(q, 'A', 1);
    const [hi] = await enqKeyed(q, 'A', 1, { priority: 5 });
    const c = await claim(q, 1);
    expect(c.jobs.map((j) => j.id)).toEqual([hi]);
    await t.stores.queues.finishLaneMove(q);
    await t.store.release(q, 'w1', [{ id: hi, lockToken: c.jobs[0].lockToken }]);
    // Claim one of A's two waiting jobs and complete it: one A job is still waiting.
    const c2 = await claim(q, 1);
    await t.store.complete(q, 'w1', [{ id: c2.jobs[0].id, lockToken: c2.jobs[0].lockToken, result: null }]);
    expect(await t.redis.zcard(t.keys(q).waiting)).toBe(1);
    const top = await t.stores.queues.keys(q, 10);
    expect(top.map((e) => [e.key, e.waiting, e.active])).toEqual([['A', 1, 0]]);
  });

  // The same stale lane entries are read as waiting jobs by keyCounts /
  // topKeys (waiting = ZCARD lane) once the queue is in lanes mode.
  it('right after the move, GET keys counts a job claimed during the move as waiting, not active', async () => {
    const q = newQueue();
    await enqKeyed(q, 'A', 3);
    const [hi] = await enqKeyed(q, 'A', 1, { priority: 5 });
    expect((await claim(q, 1)).jobs.map((j) => j.id)).toEqual([hi]);
    await t.stores.queues.finishLaneMove(q);
    expect(await t.stores.queues.keyCounts(q, 'A')).toEqual({ waiting: 3, active: 1 });
    const [a] = await t.stores.queues.keys(q, 10);
    expect([a.waiting, a.active]).toEqual([3, 1]);
  });
});

describe('turns -> lanes with aging', () => {
  // Before the fix: turnReady adds a job to its lane during the move with
  // laneScore(L, pr, sq, nil): no readyAt, so with aging the job counts as
  // ready since AGING_T0 (2026-01-01) — months "older" than the key's real
  // backlog. The move's own ZSCAN may not visit it again (added mid-scan), so
  // it keeps that score and jumps ahead of its key's whole backlog.
  // (lanes-mode makeReady reads ra/ca for aging; turnReady does not.)
  it('jobs enqueued while configure({agingMs}) moves a turns queue to lanes jump ahead of their key\'s older jobs', async () => {
    const q = newQueue();
    const k = t.keys(q);
    const old = await enqKeyed(q, 'A', 3000);
    expect(await t.redis.hget(k.meta, 'km')).toBe('t');
    const run = t.scripts.run.bind(t.scripts);
    let late: string[] = [];
    const spy = jest.spyOn(t.scripts, 'run').mockImplementation(async (name, keys, args) => {
      const r = await run(name, keys, args);
      if (name === 'rebuildLanes' && args[1] === 'jobs' && args[2] === '0' && !late.length) {
        // Between the move's first and second chunk: new jobs of key A.
        late = await enqKeyed(q, 'A', 50);
      }
      return r as never;
    });
    try {
      await t.stores.queues.configure(q, { agingMs: 60_000 });
    } finally {
      spy.mockRestore();
    }
    expect(late).toHaveLength(50);
    expect(await t.redis.hget(k.meta, 'km')).toBe('1');
    // Same priority, so aging orders by readyAt: A's oldest job runs first.
    const [first] = (await claim(q, 1)).jobs;
    expect({ first: first.id, late: late.includes(first.id) }).toEqual({ first: old[0], late: false });
  });
});

describe('turns -> lanes: a move that never starts', () => {
  // Before the fix: configure() writes kc to meta (MULTI), then runs rebuildLanes 'jobs',
  // whose first call sets kmig. A failure between the two (process killed,
  // Redis connection lost, timeout) leaves km = 't' with kc set and no kmig:
  // the maintenance pass looks only at kmig, keyedOn never runs again, so the
  // limit is never applied — not within a second, not ever (until another
  // configure touching a lane setting).
  it('configure({keyConcurrency}) failing before the move starts: the limit never holds, and the maintenance pass does not finish it', async () => {
    const q = newQueue();
    const k = t.keys(q);
    await enqKeyed(q, 'A', 10);
    expect(await t.redis.hget(k.meta, 'km')).toBe('t');
    const run = t.scripts.run.bind(t.scripts);
    const spy = jest.spyOn(t.scripts, 'run').mockImplementation(async (name, keys, args) => {
      if (name === 'rebuildLanes' && args[1] === 'jobs') throw new Error('connection lost');
      return (await run(name, keys, args)) as never;
    });
    await expect(t.stores.queues.configure(q, { keyConcurrency: 1 })).rejects.toThrow('connection lost');
    spy.mockRestore();
    expect((await t.stores.queues.settings(q))?.keyConcurrency).toBe(1);
    // The scheduler's pass (src/maintenance/lanes.ts) runs.
    await t.stores.queues.finishLaneMove(q);
    const held: ClaimedJob[] = (await claim(q, 10)).jobs;
    expect(held.length).toBeLessThanOrEqual(1);
  });

  it('setKeyOverride failing before the move starts: the override never holds', async () => {
    const q = newQueue();
    await enqKeyed(q, 'A', 10);
    const run = t.scripts.run.bind(t.scripts);
    const spy = jest.spyOn(t.scripts, 'run').mockImplementation(async (name, keys, args) => {
      if (name === 'rebuildLanes' && args[1] === 'jobs') throw new Error('connection lost');
      return (await run(name, keys, args)) as never;
    });
    await expect(t.stores.queues.setKeyOverride(q, 'A', { concurrency: 1 })).rejects.toThrow('connection lost');
    spy.mockRestore();
    expect((await t.stores.queues.keys(q, 10))[0].overrides).toEqual({ concurrency: 1, rateLimit: null });
    await t.stores.queues.finishLaneMove(q);
    expect((await claim(q, 10)).jobs.length).toBeLessThanOrEqual(1);
  });
});
