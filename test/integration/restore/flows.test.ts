/**
 * Workflows after a Redis loss (docs/workflows.md "PostgreSQL, restore, Redis
 * loss"): flows are mirrored into PostgreSQL, a private redis-server loses
 * everything (FLUSHALL), and the restore (src/restore/restore.ts,
 * src/restore/flow-restore.ts) brings back the blocked jobs and the flows'
 * records. Real Redis and PostgreSQL throughout.
 *
 * 1. A diamond (a → b, c → d; b, c, d in another queue than a): a and c
 *    completed, b running, d blocked. After the restore d is blocked again
 *    with its flow fields, the record is back (a and c counted once), b is
 *    waiting; completing b releases d once (one
 *    `unblocked`), and d's claim carries its dependencies. A second restore
 *    pass changes nothing.
 * 2. Every dependency completed in PostgreSQL but d still blocked at the loss
 *    (the flow worker had not run): the restore releases it, once.
 * 3. A dependency failed (dead-lettered) before the flow worker acted: its
 *    `cancel` dependent is cancelled (reason dependency_failed) and the
 *    cancellation goes on down the graph, its `run` dependent is released;
 *    a DLQ retry of the failed job brings the cancelled one back to blocked.
 * 4. At run time, Redis rewound to a snapshot (every key DUMPed, then
 *    FLUSHALL and RESTORE) taken before a and b completed, d blocked in
 *    another queue that did not change: the restore watch (src/restore/
 *    loss-watch.ts) resets and restores a and b's queue, the kept record
 *    gets their outcomes, and d is released once, after the queue's check.
 * 5. Only d's queue and the flow's record rewound (a cluster shard came back
 *    from a snapshot), after the flow worker had released d: a and b, in a
 *    queue Redis kept, give their outcomes to the stale record; d runs once
 *    and the record completes.
 */
import { MirrorWriter } from '../../../src/mirror/mirror-writer';
import { QueueRestorer } from '../../../src/restore/restore';
import { advanceFlows } from '../../../src/flows/flow-worker';
import { RedisLossWatch } from '../../../src/restore/loss-watch';
import { flowKeyBase } from '../../../src/redis/stores/flow-record';
import { openTestDb, TestDb } from '../../support/postgres';
import { openStore, TestStore } from '../../support/redis';
import { removeDir, RedisServer, startRedisServer, stopAllRedisServers } from '../../support/redis-server';
import { scriptHelpers } from '../../support/scripts';
import { FlowSpec, submitFlow } from '../../support/flows';
import { entryFields } from '../../../src/mirror/projection';
import { v7 as uuidv7 } from 'uuid';
import { normalizeEnqueue } from '../../../src/core/job-options';
import { type PlacedFlowJob, submitFlow as submitFlowSteps } from '../../../src/flows/submit-flow';

jest.setTimeout(120_000);

let server: RedisServer;
let t: TestStore;
let db: TestDb;
let restorer: QueueRestorer;
beforeAll(async () => {
  server = await startRedisServer({ name: 'restore-flows' });
  t = await openStore('rflows', server.url);
  db = await openTestDb('restore_flows');
  restorer = new QueueRestorer(db.dataSource, t.stores, { chunkSize: 2 });
});
afterAll(async () => {
  await t?.close();
  await db?.close();
  await stopAllRedisServers();
  removeDir(server?.opts.dir);
});

const { newQueue, raw, events } = scriptHelpers(() => t, 'rf');

/** Mirrors every pending event of `queues` into PostgreSQL (the writer takes each over: its restore check runs). */
async function mirror(queues: string[]): Promise<void> {
  const w = new MirrorWriter(t.stores, db.dataSource, {
    writerId: `w-${queues.join('-')}`,
    onAcquire: (queue) => restorer.ensureQueue(queue, { lockToken: `w-${queues.join('-')}` }).then(() => undefined),
  });
  await (w as any).refreshOwnership();
  while ((await w.runOnce()) > 0);
  for (const q of queues) await t.stores.ownership.release(q, `w-${queues.join('-')}`);
  const rows = await db.dataSource.query(`SELECT count(*)::int AS n FROM jobs WHERE queue = ANY($1)`, [queues]);
  expect(rows[0].n).toBeGreaterThan(0);
}

/** Claims everything ready in `q`; completes it (or fails it without retry, for `fail`). */
async function runReady(q: string, fail: Set<string> = new Set()) {
  const c = await t.store.claim(q, 100, 30_000, 'w');
  for (const j of c.jobs) {
    if (fail.has(j.id)) await t.store.fail(q, j.id, j.lockToken, { error: 'boom', retryable: false, delayMs: 0, reason: 'error', workerId: 'w' });
    else await t.store.complete(q, 'w', [{ id: j.id, lockToken: j.lockToken, result: { done: j.id } }]);
  }
  return c.jobs;
}

/** Redis loses everything (the private server only). */
async function loseRedis(): Promise<void> {
  await t.redis.flushall();
  expect(await t.redis.dbsize()).toBe(0);
}

/** Every key of the private server (or those `only` accepts) with its TTL, as a snapshot holds them. */
async function snapshot(only: (key: string) => boolean = () => true): Promise<[string, number, Buffer][]> {
  const out: [string, number, Buffer][] = [];
  for (const key of (await t.redis.keys('*')).filter(only)) out.push([key, await t.redis.pttl(key), (await t.redis.dumpBuffer(key))!]);
  return out;
}

/** Redis (or the keys `only` accepts) comes back from `snap`: everything after it is gone. */
async function rewind(snap: [string, number, Buffer][], only?: (key: string) => boolean): Promise<void> {
  if (!only) await t.redis.flushall();
  else for (const key of (await t.redis.keys('*')).filter(only)) await t.redis.del(key);
  for (const [key, ttl, v] of snap) await t.redis.restore(key, ttl > 0 ? ttl : 0, v);
}

const status = async (q: string, id: string) => (await raw(q, id)).s;
const eventsNamed = async (q: string, id: string, e: string) => (await events(q, id)).filter((x) => x.e === e);
const record = (flowId: string, part: string) => t.redis.hgetall(flowKeyBase(t.prefix, flowId) + part);

it('a diamond: d comes back blocked with its record, b ends, d is released once and its claim carries its dependencies', async () => {
  const [q1, q2] = [newQueue(), newQueue()];
  const specs: FlowSpec[] = [
    { ref: 'a', queue: q1 },
    { ref: 'b', queue: q2, deps: ['a'] },
    { ref: 'c', queue: q2, deps: ['a'] },
    { ref: 'd', queue: q2, deps: ['b', 'c'] },
  ];
  const { flowId, id } = await submitFlow(t, specs);
  expect((await runReady(q1)).map((j) => j.id)).toEqual([id.a]);
  await advanceFlows(t.stores.flows);
  // c completes; b is running when Redis goes.
  const running = await t.store.claim(q2, 10, 30_000, 'w');
  expect(running.jobs.map((j) => j.id).sort()).toEqual([id.b, id.c].sort());
  const c = running.jobs.find((j) => j.id === id.c)!;
  await t.store.complete(q2, 'w', [{ id: c.id, lockToken: c.lockToken, result: { done: c.id } }]);
  await advanceFlows(t.stores.flows);
  expect(await status(q2, id.d)).toBe('blocked');
  await mirror([q1, q2]);
  expect(await db.dataSource.query(`SELECT status FROM jobs WHERE id = $1`, [id.d])).toEqual([{ status: 'blocked' }]);

  await loseRedis();
  const reports = await restorer.checkAll({ only: [q1, q2] });
  expect(reports.map((r) => r.action)).toEqual(['restored', 'restored']);
  expect(reports[1].counts).toMatchObject({ active: 1, blocked: 1 });
  // q1 (a's queue) comes first: it writes the record; q2 finds it.
  expect(reports[0].flows).toMatchObject({ flows: 1, created: 1, applied: 2, released: 0, cancelled: 0 });
  expect(reports[1].flows).toMatchObject({ flows: 1, created: 0, applied: 0, released: 0, cancelled: 0 });

  // d blocked again, with its flow fields; b waiting with its own.
  const d = await raw(q2, id.d);
  expect(d).toMatchObject({ s: 'blocked', fl: flowId, fp: 'c', rf: 'd' });
  expect(JSON.parse(d.dp)).toEqual([
    { ref: 'b', id: id.b, queue: q2 },
    { ref: 'c', id: id.c, queue: q2 },
  ]);
  expect(await t.redis.zrange(t.keys(q2).blocked, 0, -1)).toEqual([id.d]);
  expect(await t.redis.zrange(t.keys(q2).waiting, 0, -1)).toEqual([id.b]);
  expect((await raw(q2, id.b)).fl).toBe(flowId);
  // The record: a and c counted once, d waits for b only.
  expect(await record(flowId, 'out')).toEqual({ [id.a]: 'c', [id.c]: 'c' });
  expect((await record(flowId, 'left'))[id.d]).toBe('1');
  expect(await record(flowId, 'meta')).toMatchObject({ project: 'default', n: '4', nc: '2', nx: '0' });

  // A second pass (the watch after a check, or a replayed restore) counts nothing twice (c, of q2, included).
  expect(await restorer.releaseFlows(q2)).toMatchObject({ flows: 1, created: 0, applied: 0, released: 0 });
  expect((await record(flowId, 'meta')).nc).toBe('2');
  expect((await record(flowId, 'left'))[id.d]).toBe('1');

  // b runs again and completes: the flow worker (its queues watched again) releases d, once.
  expect((await runReady(q2)).map((j) => j.id)).toEqual([id.b]);
  await advanceFlows(t.stores.flows);
  await advanceFlows(t.stores.flows);
  await restorer.releaseFlows(q2);
  expect(await eventsNamed(q2, id.d, 'unblocked')).toHaveLength(1);
  const claimed = await t.store.claim(q2, 10, 30_000, 'w');
  expect(claimed.jobs.map((j) => j.id)).toEqual([id.d]);
  expect(claimed.jobs[0].dependencies).toEqual([
    { ref: 'b', id: id.b, status: 'completed' },
    { ref: 'c', id: id.c, status: 'completed' },
  ]);
});

it('every dependency completed while d was still blocked: the restore releases d, once', async () => {
  const [q1, q2] = [newQueue(), newQueue()];
  const { flowId, id } = await submitFlow(t, [
    { ref: 'a', queue: q1 },
    { ref: 'b', queue: q1 },
    { ref: 'd', queue: q2, deps: ['a', 'b'] },
  ]);
  expect((await runReady(q1)).map((j) => j.id).sort()).toEqual([id.a, id.b].sort());
  // The flow worker never ran: d is blocked, its dependencies completed.
  expect(await status(q2, id.d)).toBe('blocked');
  await mirror([q1, q2]);

  await loseRedis();
  const reports = await restorer.checkAll({ only: [q1, q2] });
  expect(reports.map((r) => r.action)).toEqual(['restored', 'restored']);
  // q1's pass writes the record (d's queue is not back yet: nothing to move); q2's releases d.
  expect(reports[0].flows).toMatchObject({ flows: 1, created: 1, applied: 2, released: 0 });
  expect(reports[1].flows).toMatchObject({ flows: 1, created: 0, applied: 0, released: 1 });
  expect(await status(q2, id.d)).toBe('waiting');
  expect(await eventsNamed(q2, id.d, 'unblocked')).toHaveLength(1);
  expect(await record(flowId, 'out')).toEqual({ [id.a]: 'c', [id.b]: 'c' });

  // Again: nothing more.
  expect(await restorer.releaseFlows(q2)).toMatchObject({ applied: 0, released: 0 });
  await advanceFlows(t.stores.flows);
  expect(await eventsNamed(q2, id.d, 'unblocked')).toHaveLength(1);
  const claimed = await t.store.claim(q2, 10, 30_000, 'w');
  expect(claimed.jobs.map((j) => j.id)).toEqual([id.d]);
  expect(claimed.jobs[0].dependencies.map((x) => x.status)).toEqual(['completed', 'completed']);
});

it('a failed dependency: its cancel dependent is cancelled down the graph, its run dependent released; a DLQ retry brings them back', async () => {
  const [q1, q2] = [newQueue(), newQueue()];
  const { flowId, id } = await submitFlow(t, [
    { ref: 'a', queue: q1 },
    { ref: 'd', queue: q2, deps: ['a'] },
    { ref: 'r', queue: q2, deps: ['a'], run: true },
    { ref: 'e', queue: q1, deps: ['d'] },
  ]);
  expect((await runReady(q1, new Set([id.a]))).map((j) => j.id)).toEqual([id.a]);
  expect(await status(q1, id.a)).toBe('failed');
  await mirror([q1, q2]);
  expect(
    (await db.dataSource.query(`SELECT id::text, status FROM jobs WHERE flow_id = $1 ORDER BY flow_ref`, [flowId])).map((r: any) => r.status),
  ).toEqual(['failed', 'blocked', 'blocked', 'blocked']);

  await loseRedis();
  const reports = await restorer.checkAll({ only: [q1, q2] });
  expect(reports.map((r) => r.action)).toEqual(['restored', 'restored']);
  expect(reports[0].counts).toMatchObject({ failed: 1, blocked: 1 });
  expect(reports[1].flows).toMatchObject({ cancelled: 1, released: 1 });
  expect(await status(q2, id.d)).toBe('cancelled');
  expect((await eventsNamed(q2, id.d, 'cancelled')).map((x) => x.r)).toEqual(['dependency_failed']);
  expect(await status(q2, id.r)).toBe('waiting');
  expect(await status(q1, id.e)).toBe('blocked');
  // d's cancellation went to q2's outbox: the flow worker carries it on to e.
  await advanceFlows(t.stores.flows);
  expect(await status(q1, id.e)).toBe('cancelled');
  expect(await restorer.releaseFlows(q2)).toMatchObject({ applied: 0, released: 0, cancelled: 0 });
  expect(await eventsNamed(q2, id.d, 'cancelled')).toHaveLength(1);

  // a came back to the DLQ with its flow fields: its retry blocks d and e again.
  expect((await raw(q1, id.a)).fl).toBe(flowId);
  expect(await t.stores.deadLetters.retry(q1, id.a)).toBe('waiting');
  await advanceFlows(t.stores.flows);
  await advanceFlows(t.stores.flows);
  expect([await status(q2, id.d), await status(q1, id.e)]).toEqual(['blocked', 'blocked']);
});

it('at run time, Redis rewound to before the dependencies completed: the watch restores their queue and d is released once', async () => {
  const [q1, q2] = [newQueue(), newQueue()];
  const { flowId, id } = await submitFlow(t, [
    { ref: 'a', queue: q1 },
    { ref: 'b', queue: q1 },
    { ref: 'd', queue: q2, deps: ['a', 'b'] },
  ]);
  await mirror([q1, q2]);
  const snap = await snapshot();
  // After the snapshot: a and b complete and are mirrored; the flow worker has not run.
  expect((await runReady(q1)).map((j) => j.id).sort()).toEqual([id.a, id.b].sort());
  await mirror([q1, q2]);
  await rewind(snap);
  expect([await status(q1, id.a), await status(q2, id.d)]).toEqual(['waiting', 'blocked']);
  expect(await record(flowId, 'out')).toEqual({});

  const watch = new RedisLossWatch(db.dataSource, t.stores, restorer, { intervalMs: 3_600_000 });
  const report = await watch.check();
  expect(report?.rewound).toEqual([q1]);
  expect(report?.reports.find((r) => r.queue === q1)?.flows).toMatchObject({ flows: 1, created: 0, released: 1 });
  // a and b never run again; the kept record has their outcomes; d released once.
  expect(await t.redis.exists(`${t.keys(q1).base}job:${id.a}`, `${t.keys(q1).base}job:${id.b}`)).toBe(0);
  expect(await record(flowId, 'out')).toEqual({ [id.a]: 'c', [id.b]: 'c' });
  expect((await record(flowId, 'meta')).nc).toBe('2');
  expect(await status(q2, id.d)).toBe('waiting');
  expect(await eventsNamed(q2, id.d, 'unblocked')).toHaveLength(1);
  expect(await watch.check()).toBeNull();
  expect(await restorer.releaseFlows(q1)).toMatchObject({ applied: 0, released: 0 });
  expect(await eventsNamed(q2, id.d, 'unblocked')).toHaveLength(1);
  const claimed = await t.store.claim(q2, 10, 30_000, 'w');
  expect(claimed.jobs.map((j) => j.id)).toEqual([id.d]);
  expect(claimed.jobs[0].dependencies.map((x) => x.status)).toEqual(['completed', 'completed']);
});

it("a cluster shard rewound (d's queue and the record) after d was released: the record gets the outcomes of the queue Redis kept, d runs once", async () => {
  const [q1, q2] = [newQueue(), newQueue()];
  const { flowId, id } = await submitFlow(t, [
    { ref: 'a', queue: q1 },
    { ref: 'b', queue: q1 },
    { ref: 'd', queue: q2, deps: ['a', 'b'] },
  ]);
  await mirror([q1, q2]);
  const shard = (key: string) => key.includes(`{flow:${flowId}}`) || key.includes(`{${q2}}`);
  const snap = await snapshot(shard);
  expect((await runReady(q1)).map((j) => j.id).sort()).toEqual([id.a, id.b].sort());
  await advanceFlows(t.stores.flows);
  expect(await status(q2, id.d)).toBe('waiting');
  await mirror([q1, q2]);
  await rewind(snap, shard);
  expect([await status(q2, id.d), await record(flowId, 'out')]).toEqual(['blocked', {}]);

  const watch = new RedisLossWatch(db.dataSource, t.stores, restorer, { intervalMs: 3_600_000 });
  expect((await watch.check())?.rewound).toEqual([q2]);
  expect(await record(flowId, 'out')).toEqual({ [id.a]: 'c', [id.b]: 'c' });
  expect(await status(q2, id.d)).toBe('waiting');
  expect(await runReady(q2)).toHaveLength(1);
  await advanceFlows(t.stores.flows);
  expect(await record(flowId, 'meta')).toMatchObject({ n: '3', nc: '3', nx: '0' });
  expect(await t.redis.pttl(flowKeyBase(t.prefix, flowId) + 'meta')).toBeGreaterThan(0);
});

// ---- Issue 34 (third probe), defect 2: flows answered 201 that never finished after a Redis loss.

/** The entries of `q`'s stream that `keep` refuses are removed: Redis lost them before the mirror wrote them. */
async function dropEntries(q: string, drop: (f: Record<string, string>) => boolean): Promise<number> {
  const entries = await t.redis.xrange(t.keys(q).events, '-', '+');
  let n = 0;
  for (const [id, flat] of entries) {
    const f = entryFields(flat);
    if (drop(f)) n += await t.redis.xdel(t.keys(q).events, id);
  }
  return n;
}

it("shape (a): a root whose `unblocked` Redis lost before the mirror wrote it comes back blocked with nothing to wait for: it is released, once, and the flow ends", async () => {
  const [q1, q2] = [newQueue(), newQueue()];
  const { flowId, id } = await submitFlow(t, [
    { ref: 'a', queue: q1 },
    { ref: 'b', queue: q2, deps: ['a'] },
  ]);
  // PostgreSQL got a's `enqueued` (blocked) but not its `unblocked`: the loss came in between.
  expect(await dropEntries(q1, (f) => f.e === 'unblocked' && f.j === id.a)).toBe(1);
  await mirror([q1, q2]);
  expect(await db.dataSource.query(`SELECT status FROM jobs WHERE id = $1`, [id.a])).toEqual([{ status: 'blocked' }]);

  await loseRedis();
  const reports = await restorer.checkAll({ only: [q1, q2] });
  expect(reports.map((r) => r.action)).toEqual(['restored', 'restored']);
  expect(reports[0].flows).toMatchObject({ flows: 1, created: 1, released: 1 });
  expect(await status(q1, id.a)).toBe('waiting');
  expect(await eventsNamed(q1, id.a, 'unblocked')).toHaveLength(1);
  // Again: nothing more.
  expect(await restorer.releaseFlows(q1)).toMatchObject({ released: 0 });
  expect(await runReady(q1)).toHaveLength(1);
  await advanceFlows(t.stores.flows);
  expect(await status(q2, id.b)).toBe('waiting');
  expect(await runReady(q2)).toHaveLength(1);
  await advanceFlows(t.stores.flows);
  expect(await record(flowId, 'meta')).toMatchObject({ n: '2', nc: '2', nx: '0' });
});

it('shape (b): dependencies lost with Redis before they reached PostgreSQL end the flow: cancel dependents cancelled, run dependents run, dp names their queue', async () => {
  const [q1, q2] = [newQueue(), newQueue()];
  const { flowId, id } = await submitFlow(t, [
    { ref: 'a', queue: q1 },
    { ref: 'b', queue: q2, deps: ['a'] },
    { ref: 'r', queue: q2, deps: ['a'], run: true },
    { ref: 'e', queue: q2, deps: ['b'] },
  ]);
  // Only q2 reaches PostgreSQL: q1's mirror lock is held elsewhere until Redis loses everything.
  expect(await t.stores.ownership.take(q1, 'elsewhere', 60_000)).toBe(true);
  await mirror([q2]);
  expect(await db.dataSource.query(`SELECT count(*)::int AS n FROM jobs WHERE id = $1`, [id.a])).toEqual([{ n: 0 }]);

  await loseRedis();
  const [report] = await restorer.checkAll({ only: [q2] });
  expect(report.action).toBe('restored');
  expect(report.flows).toMatchObject({ flows: 1, created: 1, lost: 1, released: 1, cancelled: 1 });
  // b was to wait for a, which never ran and never will: cancelled; r (policy run) runs; e follows b down the graph.
  expect(await status(q2, id.b)).toBe('cancelled');
  expect((await eventsNamed(q2, id.b, 'cancelled')).map((x) => x.r)).toEqual(['dependency_failed']);
  expect(await status(q2, id.r)).toBe('waiting');
  expect(JSON.parse((await raw(q2, id.r)).dp)).toEqual([{ ref: 'a', id: id.a, queue: q1 }]);
  await advanceFlows(t.stores.flows);
  expect(await status(q2, id.e)).toBe('cancelled');
  expect((await runReady(q2)).length).toBe(1);
  await advanceFlows(t.stores.flows);
  // The record holds a as ended; every job has an outcome: the flow has ended.
  expect(await record(flowId, 'out')).toEqual({ [id.a]: 'x', [id.b]: 'x', [id.e]: 'x', [id.r]: 'c' });
  expect(await record(flowId, 'meta')).toMatchObject({ n: '4', nc: '1', nx: '3' });
});

it('a dependency that completes while its dependent is being restored: the moves are read once the jobs are back, the dependent is released once', async () => {
  const [q1, q2] = [newQueue(), newQueue()];
  const { flowId, id } = await submitFlow(t, [
    { ref: 'a', queue: q1 },
    { ref: 'd', queue: q2, deps: ['a'] },
  ]);
  await mirror([q1, q2]);
  await loseRedis();
  expect((await restorer.checkAll({ only: [q1] }))[0].action).toBe('restored');
  // q2's restore: the record is read (d waits for a), then, before d is back, a completes and the flow
  // worker's move of d finds nothing to move; then d comes back blocked.
  let once = false;
  const restore = Object.create(t.stores.restore) as typeof t.stores.restore;
  restore.restoreJobs = async (...args) => {
    if (!once && args[3].length) {
      once = true;
      expect((await runReady(q1)).map((j) => j.id)).toEqual([id.a]);
      await advanceFlows(t.stores.flows);
      expect((await record(flowId, 'left'))[id.d]).toBe('0');
    }
    return t.stores.restore.restoreJobs(...args);
  };
  const racing = new QueueRestorer(db.dataSource, { ...t.stores, restore }, { chunkSize: 2 });
  const [report] = await racing.checkAll({ only: [q2] });
  expect(once).toBe(true);
  expect(report.flows).toMatchObject({ released: 1 });
  expect(await status(q2, id.d)).toBe('waiting');
  expect(await eventsNamed(q2, id.d, 'unblocked')).toHaveLength(1);
});

it('Redis loses everything while a flow is submitted, between its record and its jobs: the submission is refused (503), not answered with a flow whose record is gone', async () => {
  const [q1, q2] = [newQueue(), newQueue()];
  const flowId = uuidv7();
  const ids = { a: uuidv7(), b: uuidv7() };
  const jobs: PlacedFlowJob[] = [
    { ...normalizeEnqueue({ queue: q1, type: 't', payload: {} }, 1e6), flow: { flowId, jobId: ids.a, ref: 'a', onDependencyFailure: 'cancel', dependsOn: [] } },
    { ...normalizeEnqueue({ queue: q2, type: 't', payload: {} }, 1e6), flow: { flowId, jobId: ids.b, ref: 'b', onDependencyFailure: 'cancel', dependsOn: [{ ref: 'a', id: ids.a, queue: q1 }] } },
  ];
  // The loss lands after the record was written, before the first job is created.
  let lost = false;
  const store = Object.create(t.store) as typeof t.store;
  store.enqueue = async (...args) => {
    if (!lost) {
      lost = true;
      await loseRedis();
    }
    return t.store.enqueue(...args);
  };
  await expect(submitFlowSteps({ jobs: store, flows: t.stores.flows }, flowId, 'default', jobs)).rejects.toMatchObject({ code: 'unavailable' });
  expect(lost).toBe(true);
  // What the submission made after the loss lives without the record: POST /flows rolls it back (src/flows/flows.service.ts).
  expect(await t.stores.flows.exists(flowId)).toBe(false);
});
