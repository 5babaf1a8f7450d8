/**
 * Workflows on a real 3-master Redis Cluster (issue 21: "flows work on Redis
 * Cluster, jobs of one flow may live in different slots"). Each flow's queues
 * sit on two different shards and its record (`<prefix>:{flow:<id>}:`) on the
 * third, checked with CLUSTER KEYSLOT, the client's slot map and the keys
 * found on those very nodes; so every step of a flow crosses shards.
 *
 * Through the stores on a Cluster client (the cases of flow-worker.test.ts):
 * a diamond runs in dependency order and its last job reads the others'
 * results; a failure cancels the default dependents down the graph while a
 * "run" dependent runs, and a DLQ retry brings them back; an entry taken by a
 * flow worker that died is applied once; claimed jobs carry their
 * dependencies' statuses read from other shards and other flows' records.
 *
 * Over HTTP (an in-process app, ROLE api,scheduler,audit, on the cluster):
 * POST /flows across two shards, the external worker protocol, the claim's
 * dependencies, GET /jobs/:id/dependencies, GET and DELETE /flows/:id.
 *
 * With real processes (as fan-in-crash.test.ts): 500 children in one queue,
 * their parent in a queue on another shard, two `node dist/main.js` (ROLE
 * worker,scheduler, REDIS_CLUSTER_NODES), one SIGKILLed mid-run, and a third
 * flow worker (the test) dying after advancing the record for a few entries;
 * the parent is released exactly once, after every child's `completed`, and
 * runs once, and each child's completion is counted once in the record.
 */
import { randomUUID } from 'node:crypto';
import Redis, { Cluster } from 'ioredis';
import type { ClaimedJob } from '../../../src/core/job';
import { advanceFlows } from '../../../src/flows/flow-worker';
import { FlowViewService } from '../../../src/flows/flow-view.service';
import type { HistoryQueries } from '../../../src/history';
import type { JobsService } from '../../../src/jobs/jobs.service';
import { createRedis, readyMasters } from '../../../src/redis/connection';
import { RedisScripts } from '../../../src/redis/scripts';
import { REDIS_STORES } from '../../../src/redis/redis.module';
import { createRedisStores, type RedisStores } from '../../../src/redis/stores';
import { flowKeyBase } from '../../../src/redis/stores/flow-record';
import { auditEvents, waitUntil } from '../../support/cases';
import { FlowSpec, submitFlow } from '../../support/flows';
import { startTestApi, TestApi } from '../../support/http';
import { killAll, SluiceProcess, startSluice } from '../../support/process';
import { readEvents, sleep, testPrefix, TestStore } from '../../support/redis';
import { RedisClusterHandle, removeDir, startRedisCluster, stopAllRedisServers } from '../../support/redis-server';
import { expectLegal } from '../../support/scripts';

jest.setTimeout(90_000);

let cluster: RedisClusterHandle;
let t: TestStore;
let admin: Redis;
const direct = new Map<string, Redis>();
const procs: SluiceProcess[] = [];
let api: TestApi | undefined;
const clients: (Redis | Cluster)[] = [];

/** The stores on a Cluster client under a fresh prefix (the cluster is private: close() only disconnects). */
async function openClusterStore(name: string): Promise<TestStore> {
  const prefix = testPrefix(name);
  const redis = createRedis({ redisUrl: 'redis://unused', redisClusterNodes: cluster.nodes });
  clients.push(redis);
  const scripts = new RedisScripts(redis);
  await scripts.verify();
  await readyMasters(redis);
  const stores = createRedisStores(redis, prefix, undefined, scripts);
  return { redis, stores, store: stores.jobs, scripts, keys: (q) => stores.ctx.keys(q), prefix, close: async () => redis.disconnect() };
}

beforeAll(async () => {
  cluster = await startRedisCluster(3, 7131);
  for (const n of cluster.nodes) {
    const c = new Redis({ host: n.host, port: n.port, retryStrategy: () => null });
    clients.push(c);
    direct.set(`${n.host}:${n.port}`, c);
  }
  admin = [...direct.values()][0];
  t = await openClusterStore('cflows');
}, 60_000);

afterAll(async () => {
  await api?.close();
  await killAll(procs);
  clients.forEach((c) => c.disconnect());
  await stopAllRedisServers();
  removeDir(cluster?.dir);
});

interface Placed {
  slot: number;
  /** The master serving the slot in the client's slot map, "host:port". */
  node: string;
}

async function placeOf(s: TestStore, key: string): Promise<Placed> {
  const slot = Number(await admin.cluster('KEYSLOT', key));
  return { slot, node: (s.redis as Cluster).slots[slot][0] };
}
const queueAt = (s: TestStore, q: string) => placeOf(s, s.keys(q).waiting);
const recordAt = (s: TestStore, flowId: string) => placeOf(s, `${flowKeyBase(s.prefix, flowId)}meta`);

/**
 * Two queue names on two different shards, and a flow id whose record hashes
 * to a slot of the third shard.
 */
async function spread(s: TestStore, name: string): Promise<{ q1: string; q2: string; flowId: string; at: Placed[] }> {
  const q1 = `${name}-0`;
  const p1 = await queueAt(s, q1);
  let i = 1;
  while ((await queueAt(s, `${name}-${i}`)).node === p1.node) i++;
  const q2 = `${name}-${i}`;
  const p2 = await queueAt(s, q2);
  let flowId: string;
  let p3: Placed;
  do {
    flowId = randomUUID();
    p3 = await recordAt(s, flowId);
  } while (p3.node === p1.node || p3.node === p2.node);
  const at = [p1, p2, p3];
  expect(new Set(at.map((p) => p.node)).size).toBe(3);
  expect(new Set(at.map((p) => p.slot)).size).toBe(3);
  return { q1, q2, flowId, at };
}

/** The keys are where the slot map says: asked on that node directly (a wrong node would answer MOVED). */
async function expectOnNode(p: Placed, key: string): Promise<void> {
  expect(await direct.get(p.node)!.exists(key)).toBe(1);
}

const raw = (q: string, id: string) => t.redis.hgetall(`${t.keys(q).base}job:${id}`);
const status = async (q: string, id: string) => (await raw(q, id)).s;
const events = async (q: string, id?: string) => (await readEvents(t.redis, t.keys(q).events)).filter((e) => !id || e.j === id);

/** Claims everything ready in `q` and completes (or fails, for `fail`) it; returns the jobs run. */
async function runReady(q: string, fail: Set<string> = new Set()): Promise<ClaimedJob[]> {
  const c = await t.store.claim(q, 100, 30_000, 'w');
  for (const j of c.jobs) {
    if (fail.has(j.id)) await t.store.fail(q, j.id, j.lockToken, { error: 'boom', retryable: false, delayMs: 0, reason: 'error', workerId: 'w' });
    else await t.store.complete(q, 'w', [{ id: j.id, lockToken: j.lockToken, result: { done: j.id } }]);
  }
  return c.jobs;
}
const ids = (jobs: { id: string }[]) => jobs.map((j) => j.id);

/**
 * GET /flows/:id and GET /jobs/:id/dependencies' service on the Cluster
 * stores; the job lookup of the HTTP route reads PostgreSQL (the mirror), so
 * it is stubbed here with the job's hash in the given queues.
 */
function flowView(queues: string[]): FlowViewService {
  const jobs = {
    get: async (id: string) => {
      for (const q of queues) {
        const j = await t.store.getJob(q, id);
        if (j) return j;
      }
      throw new Error(`job ${id} not found`);
    },
  } as unknown as JobsService;
  const history = { getJob: async () => null, dependenciesOf: async () => null, flowJobs: async () => [] } as unknown as HistoryQueries;
  return new FlowViewService(t.stores.flows, t.store, history, jobs);
}

it('a diamond across two shards, its record on a third, runs in dependency order; the last job reads the others\' results', async () => {
  const { q1, q2, flowId, at } = await spread(t, 'dia');
  const { id } = await submitFlow(t, [{ ref: 'a', queue: q1 }, { ref: 'b', queue: q2, deps: ['a'] }, { ref: 'c', queue: q1, deps: ['a'] }, { ref: 'd', queue: q2, deps: ['b', 'c'] }], flowId);
  await expectOnNode(at[0], `${t.keys(q1).base}job:${id.a}`);
  await expectOnNode(at[1], `${t.keys(q2).base}job:${id.d}`);
  await expectOnNode(at[2], `${flowKeyBase(t.prefix, flowId)}left`);
  expect(await Promise.all([status(q2, id.b), status(q1, id.c), status(q2, id.d)])).toEqual(['blocked', 'blocked', 'blocked']);
  expect(ids(await runReady(q2))).toEqual([]);
  expect(ids(await runReady(q1))).toEqual([id.a]);
  expect(await advanceFlows(t.stores.flows)).toBeGreaterThanOrEqual(1);
  expect(ids(await runReady(q1))).toEqual([id.c]);
  expect(ids(await runReady(q2))).toEqual([id.b]);
  expect(await status(q2, id.d)).toBe('blocked');
  await advanceFlows(t.stores.flows);
  const [d] = await runReady(q2);
  expect(d.id).toBe(id.d);
  // Its claim carries b's status (its own shard) and c's (the other one).
  expect(d.dependencies).toEqual([
    { ref: 'b', id: id.b, status: 'completed' },
    { ref: 'c', id: id.c, status: 'completed' },
  ]);
  await advanceFlows(t.stores.flows);
  expect(await t.redis.hmget(`${flowKeyBase(t.prefix, flowId)}meta`, 'nc', 'nx')).toEqual(['4', '0']);
  const view = flowView([q1, q2]);
  expect((await view.dependencies(id.d, 'default')).map((x) => [x.ref, x.status, x.result])).toEqual([
    ['b', 'completed', { done: id.b }],
    ['c', 'completed', { done: id.c }],
  ]);
  const flow = await view.get(flowId, 'default');
  expect(flow.status).toBe('completed');
  expect(flow.jobs.map((j) => j.status)).toEqual(['completed', 'completed', 'completed', 'completed']);
  for (const q of [q1, q2]) expectLegal(await events(q));
});

it('a failure cancels the default dependents down the graph across shards, a "run" dependent runs; a DLQ retry brings them back and they complete', async () => {
  const { q1, q2, flowId } = await spread(t, 'cas');
  const { id } = await submitFlow(t, [{ ref: 'a', queue: q1 }, { ref: 'b', queue: q2, deps: ['a'] }, { ref: 'r', queue: q2, deps: ['a'], run: true }, { ref: 'd', queue: q1, deps: ['b'] }], flowId);
  expect(ids(await runReady(q1, new Set([id.a])))).toEqual([id.a]);
  expect(await status(q1, id.a)).toBe('failed');
  // Two passes: a's failure cancels b (q2's outbox entry), b's cancellation cancels d (back on q1's shard).
  await advanceFlows(t.stores.flows);
  await advanceFlows(t.stores.flows);
  expect([await status(q2, id.b), await status(q1, id.d), await status(q2, id.r)]).toEqual(['cancelled', 'cancelled', 'waiting']);
  expect((await events(q2, id.b)).map((e) => `${e.e}:${e.r ?? ''}`)).toEqual(['enqueued:', 'cancelled:dependency_failed']);
  expect((await events(q1, id.d)).map((e) => `${e.e}:${e.r ?? ''}`)).toEqual(['enqueued:', 'cancelled:dependency_failed']);
  const [r] = await runReady(q2);
  expect(r.id).toBe(id.r);
  expect(r.dependencies).toEqual([{ ref: 'a', id: id.a, status: 'failed' }]);
  const view = flowView([q1, q2]);
  expect((await view.get(flowId, 'default')).status).toBe('failed');
  // The DLQ retry of a: b and d are blocked again, then run after a completes.
  await t.stores.deadLetters.retry(q1, id.a);
  await advanceFlows(t.stores.flows);
  expect([await status(q2, id.b), await status(q1, id.d)]).toEqual(['blocked', 'blocked']);
  expect((await view.get(flowId, 'default')).status).toBe('running');
  expect(ids(await runReady(q1))).toEqual([id.a]);
  await advanceFlows(t.stores.flows);
  expect(ids(await runReady(q2))).toEqual([id.b]);
  await advanceFlows(t.stores.flows);
  expect(ids(await runReady(q1))).toEqual([id.d]);
  await advanceFlows(t.stores.flows);
  expect((await view.get(flowId, 'default')).status).toBe('completed');
  for (const q of [q1, q2]) expectLegal(await events(q));
});

it('an entry taken by a flow worker that died is handed out again after its lease, and applied once', async () => {
  const { q1: q, flowId } = await spread(t, 'lease');
  const { id } = await submitFlow(t, [{ ref: 'a', queue: q }, { ref: 'b', queue: q, deps: ['a'] }, { ref: 'c', queue: q, deps: ['a', 'b'] }], flowId);
  expect(ids(await runReady(q))).toEqual([id.a]);
  // A worker takes a's entry, advances the record on its shard, and dies before b is unblocked in q's.
  const taken = await t.stores.flows.take(q, 10, 1000);
  expect(taken.map((e) => [e.jobId, e.outcome])).toEqual([[id.a, 'completed']]);
  await t.stores.flows.advance(taken[0].flowId, id.a, 'completed');
  expect(await t.stores.flows.take(q, 10, 1000)).toEqual([]);
  await sleep(1100);
  expect(await advanceFlows(t.stores.flows)).toBeGreaterThanOrEqual(1);
  expect(ids(await runReady(q))).toEqual([id.b]);
  await advanceFlows(t.stores.flows);
  expect(ids(await runReady(q))).toEqual([id.c]);
  const ev = await events(q);
  expect(ev.filter((e) => e.e === 'unblocked').map((e) => e.j).sort()).toEqual([id.a, id.b, id.c].sort());
  expectLegal(ev);
});

it.each([
  ['lean (in-process)', true],
  ['full (external)', false],
])('a %s claim of jobs of two flows carries their dependencies\' statuses from both shards and from both records', async (_title, lean) => {
  const name = lean ? 'lean' : 'full';
  const { q1, q2, flowId: f1, at } = await spread(t, `deps${name}`);
  // The second flow's record on another shard than the first's.
  let f2: string;
  do f2 = randomUUID();
  while ((await recordAt(t, f2)).node === at[2].node);
  const spec: FlowSpec[] = [{ ref: 'a', queue: q1 }, { ref: 'b', queue: q2 }, { ref: 'r', queue: q2, deps: ['a', 'b'], run: true }];
  const flows = [await submitFlow(t, spec, f1), await submitFlow(t, spec, f2)];
  const as = flows.map((f) => f.id.a);
  expect(ids(await runReady(q1, new Set(as))).sort()).toEqual([...as].sort());
  const bs = await t.store.claim(q2, 2, 30_000, 'w');
  expect(ids(bs.jobs).sort()).toEqual(flows.map((f) => f.id.b).sort());
  await t.store.complete(q2, 'w', bs.jobs.map((j) => ({ id: j.id, lockToken: j.lockToken, result: null })));
  await advanceFlows(t.stores.flows);
  await advanceFlows(t.stores.flows);
  // b's hashes forgotten, as after mirroring: their status comes from each flow's record.
  for (const f of flows) await t.redis.del(`${t.keys(q2).base}job:${f.id.b}`);
  const got = lean ? (await t.store.claimForWorker(q2, 2, 30_000, 'w', true)).jobs : (await t.store.claim(q2, 2, 30_000, 'w')).jobs;
  expect(ids(got).sort()).toEqual(flows.map((f) => f.id.r).sort());
  for (const j of got) {
    const f = flows.find((x) => x.id.r === j.id)!;
    expect(j.dependencies).toEqual([{ ref: 'a', id: f.id.a, status: 'failed' }, { ref: 'b', id: f.id.b, status: 'completed' }]);
  }
});

it('over HTTP on the cluster: POST /flows across two shards runs in order through the external worker protocol; dependencies, GET and DELETE /flows/:id', async () => {
  api = await startTestApi('cflowhttp', { ROLE: 'api,scheduler,audit', REDIS_CLUSTER_NODES: cluster.nodesEnv, REDIS_URL: 'redis://127.0.0.1:1' });
  const http = api.http;
  const stores = api.app.get<RedisStores>(REDIS_STORES);
  expect(stores.ctx.redis).toBeInstanceOf(Cluster);
  const s: TestStore = { ...t, redis: stores.ctx.redis, stores, store: stores.jobs, keys: (q) => stores.ctx.keys(q), prefix: api.prefix };
  const { q1, q2 } = await spread(s, 'http');
  for (const q of [q1, q2]) expect((await http.put(`/queues/${q}`).send({ external: true })).status).toBe(200);
  const claim = async (q: string) => (await http.post(`/queues/${q}/claim`).send({ workerId: 'w-1', max: 10 })).body.jobs as { id: string; lockToken: string; dependencies?: unknown }[];
  const complete = async (j: { id: string; lockToken: string }, result: unknown) => expect((await http.post(`/jobs/${j.id}/complete`).send({ lockToken: j.lockToken, result })).status).toBe(200);
  const statusOf = async (flowId: string) => Object.fromEntries(((await http.get(`/flows/${flowId}`)).body.jobs as { ref: string; status: string }[]).map((j) => [j.ref, j.status]));

  // A 503 is the contract's answer while the audit role's check of a new queue runs (API.md: unavailable, retry):
  // under a loaded suite the first POST can meet it; a client tries again.
  const postFlow = async (body: object) => {
    for (const deadline = Date.now() + 15_000; ; ) {
      const r = await http.post('/flows').send(body);
      if (r.status !== 503 || Date.now() > deadline) return r;
      await new Promise((ok) => setTimeout(ok, 100));
    }
  };
  const res = await postFlow({
    jobs: [
      { ref: 'top', type: 'etl.extract', queue: q1, payload: { n: 1 } },
      { ref: 'left', type: 'etl.left', queue: q2, dependsOn: ['top'] },
      { ref: 'right', type: 'etl.right', queue: q1, dependsOn: ['top'] },
      { ref: 'bottom', type: 'etl.join', queue: q2, dependsOn: ['left', 'right'] },
    ],
  });
  expect(res.status).toBe(201);
  const { flowId } = res.body;
  const id = Object.fromEntries(res.body.jobs.map((j: { ref: string; id: string }) => [j.ref, j.id]));
  expect(res.body.jobs.map((j: { status: string }) => j.status)).toEqual(['waiting', 'blocked', 'blocked', 'blocked']);
  const [top] = await claim(q1);
  expect(top.id).toBe(id.top);
  await complete(top, { t: 1 });
  await waitUntil('left and right released', async () => Object.values(await statusOf(flowId)).filter((x) => x === 'waiting').length === 2, 10_000, 20);
  const [right] = await claim(q1);
  const [left] = await claim(q2);
  expect([left.id, right.id]).toEqual([id.left, id.right]);
  await complete(left, { l: 1 });
  await complete(right, { r: 1 });
  await waitUntil('bottom released', async () => (await statusOf(flowId)).bottom === 'waiting', 10_000, 20);
  const [bottom] = await claim(q2);
  expect(bottom.id).toBe(id.bottom);
  expect(bottom.dependencies).toEqual([
    { ref: 'left', id: id.left, status: 'completed' },
    { ref: 'right', id: id.right, status: 'completed' },
  ]);
  await complete(bottom, null);
  await waitUntil('the flow completed', async () => (await http.get(`/flows/${flowId}`)).body.status === 'completed', 10_000, 20);
  // GET /jobs/:id reads the history: once the mirror has the jobs, their dependencies with results.
  await waitUntil('the mirror has the bottom job', async () => (await http.get(`/jobs/${id.bottom}`)).status === 200, 15_000, 50);
  const deps = await http.get(`/jobs/${id.bottom}/dependencies`);
  expect(deps.status).toBe(200);
  expect(deps.body.items.map((d: { ref: string; status: string; result: unknown }) => [d.ref, d.status, d.result])).toEqual([
    ['left', 'completed', { l: 1 }],
    ['right', 'completed', { r: 1 }],
  ]);

  // DELETE /flows/:id: a second flow, its root running, the rest cancelled across both shards.
  const second = await http.post('/flows').send({ jobs: [{ ref: 'a', type: 't', queue: q1 }, { ref: 'b', type: 't', queue: q2, dependsOn: ['a'] }, { ref: 'c', type: 't', queue: q1, dependsOn: ['b'] }] });
  expect(second.status).toBe(201);
  const del = await http.delete(`/flows/${second.body.flowId}`);
  expect(del.status).toBe(200);
  expect(del.body.jobs.map((j: { status: string }) => j.status)).toEqual(['cancelled', 'cancelled', 'cancelled']);
  expect(del.body.status).toBe('cancelled');
  expect(await claim(q1)).toEqual([]);
  expect(await claim(q2)).toEqual([]);
  await api.close(); // its scheduler would keep polling during the next test
  api = undefined;
});

test('500 children across two worker processes on the cluster, one SIGKILLed: the parent, on another shard, is released exactly once, after the last child', async () => {
  const p = await openClusterStore('cflowcrash');
  const { q1: kids, q2: top, flowId, at } = await spread(p, 'fan');
  const children = Array.from({ length: 500 }, (_, i) => ({ ref: `c${i}`, queue: kids, type: 'diag.sleep', payload: { ms: 20 } }));
  const { id } = await submitFlow(p, [...children, { ref: 'parent', queue: top, deps: children.map((c) => c.ref), type: 'diag.echo', payload: { p: 1 } }], flowId);
  await expectOnNode(at[2], `${flowKeyBase(p.prefix, flowId)}left`);
  await expectOnNode(at[1], `${p.keys(top).base}job:${id.parent}`);
  const env = {
    REDIS_CLUSTER_NODES: cluster.nodesEnv,
    REDIS_URL: 'redis://127.0.0.1:1', // must not be used
    REDIS_PREFIX: p.prefix,
    ROLE: 'worker,scheduler',
    QUEUES: `${kids},${top}`,
    WORKER_CONCURRENCY: '8',
    LOCK_TTL_MS: '1500',
    HEARTBEAT_INTERVAL_MS: '300',
    REAPER_INTERVAL_MS: '200',
    SHUTDOWN_GRACE_MS: '1000',
  };
  const [a, b] = await Promise.all([startSluice(env), startSluice(env)]);
  procs.push(a, b);
  // A third flow worker takes some children's entries, advances the record for
  // each and dies before their queue step and their ack: they come back after
  // their 1 s lease (the shortest takeFlowOutcomes gives), and the processes apply them again, changing nothing.
  const halfDone = new Set<string>();
  await waitUntil(
    'a flow worker to take a few entries',
    async () => {
      for (const e of await p.stores.flows.take(kids, 10, 1000)) {
        await p.stores.flows.advance(e.flowId, e.jobId, e.outcome);
        halfDone.add(e.jobId);
      }
      return halfDone.size >= 5;
    },
    20_000,
    2,
  );
  await waitUntil('a third of the children to complete', async () => (await auditEvents(p, kids)).filter((e) => e.e === 'completed').length >= 170, 30_000, 50);
  a.kill('SIGKILL');
  const doneAtKill = (await auditEvents(p, kids)).filter((e) => e.e === 'completed').length;
  // An entry the killed process held in flight waits out its lease (FLOW_LEASE_MS, 30 s) before b takes it.
  await waitUntil('the parent to complete', async () => (await p.redis.hget(`${p.keys(top).base}job:${id.parent}`, 's')) === 'completed', 45_000, 50);
  await sleep(300); // a second release or run would show up now

  const kidEvents = await auditEvents(p, kids);
  const completed = new Map<string, number>();
  for (const e of kidEvents) if (e.e === 'completed') completed.set(e.j, e.at);
  expect(completed.size).toBe(500);
  expect(kidEvents.filter((e) => e.e === 'completed')).toHaveLength(500);
  expect(doneAtKill).toBeLessThan(500); // the kill was mid-run
  const lastChild = Math.max(...completed.values());
  const parentEvents = (await auditEvents(p, top)).filter((e) => e.j === id.parent);
  expect(parentEvents.map((e) => e.e)).toEqual(['enqueued', 'unblocked', 'claimed', 'completed']);
  expect(parentEvents[1].at).toBeGreaterThanOrEqual(lastChild);
  process.stdout.write(`cluster fan-in: ${halfDone.size} entries left half-applied, ${doneAtKill} children completed at the SIGKILL, ${kidEvents.filter((e) => e.e === 'stalled').length} leases reaped after it; the parent released ${parentEvents[1].at - lastChild} ms after the last child\n`);
  expect(await p.redis.hmget(`${flowKeyBase(p.prefix, flowId)}meta`, 'nc', 'nx')).toEqual(['501', '0']);
  expect(b.output()).not.toMatch(/CROSSSLOT|maintenance pass failed|claim failed|worker loop crashed/);
  expect(b.proc.exitCode).toBeNull();
}, 90_000);
