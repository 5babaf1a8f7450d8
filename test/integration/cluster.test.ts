import { createHash, randomBytes } from 'node:crypto';
import Redis, { Cluster } from 'ioredis';
import { normalizeEnqueue } from '../../src/core/job-options';
import { createRedis } from '../../src/redis/connection';
import { createRedisStores, type RedisStores } from '../../src/redis/stores';
import { loadScripts, ScriptLoadError } from '../../src/redis/script-loader';
import { RedisScripts } from '../../src/redis/scripts';
import { RedisWakeWaiter } from '../../src/redis/wake/wake-waiter';
import { killAll, SluiceProcess, startSluice } from '../support/process';
import { sleep } from '../support/redis';
import {
  auditTrails,
  JobTrail,
  RedisClusterHandle,
  removeDir,
  startRedisCluster,
  stopAllRedisServers,
  waitUntil,
} from '../support/redis-server';

/**
 * Sluice on a real 3-master Redis Cluster: every queue lives in one hash slot
 * ({queue} hash tag), queues spread over shards, worker processes connect
 * with REDIS_CLUSTER_NODES, and every job runs exactly once.
 */

jest.setTimeout(90_000);

let cluster: RedisClusterHandle;
const procs: SluiceProcess[] = [];
const clients: (Redis | Cluster)[] = [];

beforeAll(async () => {
  cluster = await startRedisCluster(3, 7101);
}, 60_000);

afterAll(async () => {
  await killAll(procs);
  clients.forEach((c) => c.disconnect());
  await stopAllRedisServers();
  removeDir(cluster?.dir);
});

function nodeClient(port: number): Redis {
  const c = new Redis({ host: '127.0.0.1', port, retryStrategy: () => null });
  clients.push(c);
  return c;
}

function clusterStore(prefix: string): RedisStores {
  const redis = createRedis({ redisUrl: 'redis://unused', redisClusterNodes: cluster.nodes });
  clients.push(redis);
  return createRedisStores(redis, prefix);
}

/** slot → master node id, from CLUSTER SHARDS (Redis 7). */
async function slotOwners(
  admin: Redis,
): Promise<{ ranges: [number, number, string][]; masters: Map<string, number> }> {
  const shards = (await admin.call('CLUSTER', 'SHARDS')) as any[];
  const ranges: [number, number, string][] = [];
  const masters = new Map<string, number>();
  for (const shard of shards) {
    const s: Record<string, any> = {};
    for (let i = 0; i < shard.length; i += 2) s[shard[i]] = shard[i + 1];
    const master = (s.nodes as any[])
      .map((n) => {
        const o: Record<string, any> = {};
        for (let i = 0; i < n.length; i += 2) o[n[i]] = n[i + 1];
        return o;
      })
      .find((n) => n.role === 'master');
    if (!master) throw new Error(`shard without a master: ${JSON.stringify(shard)}`);
    masters.set(master.id, Number(master.port));
    const slots = s.slots as number[];
    for (let i = 0; i < slots.length; i += 2)
      ranges.push([Number(slots[i]), Number(slots[i + 1]), master.id]);
  }
  return { ranges, masters };
}

const ownerOf = (ranges: [number, number, string][], slot: number) =>
  ranges.find(([a, b]) => slot >= a && slot <= b)?.[2];

/**
 * Picks one queue name per master (CLUSTER KEYSLOT of the queue's keys), and
 * checks that every key of a queue, job keys included, shares one slot.
 */
async function queuesOnEveryShard(
  admin: Redis,
  store: RedisStores,
  base: string,
): Promise<{ queues: string[]; owners: string[] }> {
  const { ranges, masters } = await slotOwners(admin);
  expect(masters.size).toBe(3);
  const byOwner = new Map<string, string>();
  for (let i = 0; byOwner.size < masters.size && i < 1000; i++) {
    const q = `${base}-${i}`;
    const slot = Number(await admin.cluster('KEYSLOT', store.ctx.keys(q).waiting));
    const owner = ownerOf(ranges, slot)!;
    if (!byOwner.has(owner)) byOwner.set(owner, q);
  }
  const queues = [...byOwner.values()];
  const owners: string[] = [];
  for (const q of queues) {
    const k = store.ctx.keys(q);
    const slots = new Set<number>();
    for (const key of [
      k.waiting,
      k.delayed,
      k.active,
      k.failed,
      k.meta,
      k.events,
      k.wake,
      k.rateLimit,
      `${k.base}job:x`,
      `${k.base}idem:y`,
    ]) {
      slots.add(Number(await admin.cluster('KEYSLOT', key)));
    }
    expect(slots.size).toBe(1);
    owners.push(ownerOf(ranges, [...slots][0])!);
  }
  return { queues, owners };
}

/** Every job's audit trail over the given queues' events streams. */
async function trails(store: RedisStores, queues: string[]): Promise<Map<string, JobTrail>> {
  const out = new Map<string, JobTrail>();
  for (const q of queues)
    for (const [id, t] of await auditTrails(store.ctx.redis as any, store.ctx.keys(q).events))
      out.set(id, t);
  return out;
}

async function countCompleted(store: RedisStores, queues: string[]): Promise<number> {
  let n = 0;
  for (const t of (await trails(store, queues)).values()) n += t.count.completed ?? 0;
  return n;
}

interface Enqueued {
  queue: string;
  delayed: boolean;
}

/** `perQueue` diag.echo per queue, every fourth one delayed by 500 ms, in one enqueue call (one script per slot). */
async function enqueueAll(
  store: RedisStores,
  queues: string[],
  perQueue: number,
): Promise<Map<string, Enqueued>> {
  const inputs = queues.flatMap((queue) =>
    Array.from({ length: perQueue }, (_, i) =>
      normalizeEnqueue(
        {
          queue,
          type: 'diag.echo',
          payload: { queue, i },
          ...(i % 4 === 0 ? { delayMs: 500 } : {}),
        },
        1e6,
      ),
    ),
  );
  const res = await store.jobs.enqueue(inputs);
  const ids = new Map<string, Enqueued>();
  res.forEach((r, i) => ids.set(r.id, { queue: inputs[i].queue, delayed: r.status === 'delayed' }));
  expect(res.filter((r) => r.status === 'delayed')).toHaveLength(
    queues.length * Math.ceil(perQueue / 4),
  );
  return ids;
}

/** Each job: enqueued, (promoted,) claimed once, completed once, nothing else; hashes and sets agree. */
async function expectExactlyOnce(
  store: RedisStores,
  queues: string[],
  ids: Map<string, Enqueued>,
): Promise<void> {
  const all = await trails(store, queues);
  expect(all.size).toBe(ids.size);
  const bad: string[] = [];
  for (const [id, { queue, delayed }] of ids) {
    const expected = delayed
      ? ['enqueued', 'promoted', 'claimed', 'completed']
      : ['enqueued', 'claimed', 'completed'];
    const got = all.get(id)?.events ?? [];
    if (got.join(',') !== expected.join(',')) bad.push(`${queue}/${id}: ${got.join(',')}`);
  }
  expect(bad.slice(0, 20)).toEqual([]);
  // The job hashes agree with the audit trail: completed, one execution, result = payload.
  const sample = [...ids].filter((_, i) => i % 10 === 0);
  for (const [id, { queue }] of sample) {
    const job = await store.jobs.getJob(queue, id);
    expect(job).toMatchObject({ status: 'completed', attempts: 1, executionSeq: 1 });
    expect(job!.result).toEqual(job!.payload);
  }
  for (const q of queues)
    expect(await store.queues.liveCounts(q)).toEqual({ waiting: 0, delayed: 0, active: 0, failed: 0 });
}

test('the cluster is up: 3 masters, all slots covered', async () => {
  const admin = nodeClient(cluster.nodes[0].port);
  const info = await admin.cluster('INFO');
  expect(info).toMatch(/cluster_state:ok/);
  expect(info).toMatch(/cluster_size:3/);
  const { ranges, masters } = await slotOwners(admin);
  expect(new Set(masters.values())).toEqual(new Set(cluster.nodes.map((n) => n.port)));
  expect(ranges.reduce((n, [a, b]) => n + b - a + 1, 0)).toBe(16384);
});

test('RedisScripts.verify compiles every script on every master, and names a broken one', async () => {
  // Start from empty script caches so only verify() can have loaded them.
  const direct = cluster.nodes.map((n) => nodeClient(n.port));
  await Promise.all(direct.map((c) => c.script('FLUSH')));

  const scripts = loadScripts();
  const redis = createRedis({ redisUrl: 'redis://unused', redisClusterNodes: cluster.nodes });
  clients.push(redis);
  expect(redis).toBeInstanceOf(Cluster);
  // Right after construction, the way RedisModule.onModuleInit calls it.
  await new RedisScripts(redis, scripts).verify();

  const shas = scripts.map((s) => createHash('sha1').update(s.source).digest('hex'));
  for (const c of direct) {
    const exists = (await c.script('EXISTS', ...shas)) as number[];
    expect(exists).toEqual(shas.map(() => 1));
  }

  const broken = [...scripts, { name: 'brokenThing', numberOfKeys: 1, source: 'return (' }];
  const redis2 = createRedis({ redisUrl: 'redis://unused', redisClusterNodes: cluster.nodes });
  clients.push(redis2);
  await expect(new RedisScripts(redis2, broken).verify()).rejects.toThrow(ScriptLoadError);
  await expect(new RedisScripts(redis2, broken).verify()).rejects.toThrow(
    /lua\/brokenThing-1\.lua does not compile/,
  );
});

test('FIFO holds across a slot migration: a call that got TRYAGAIN is not overtaken by a later one', async () => {
  // Mid-migration the queue's keys are split between two masters, so the
  // enqueue script gets TRYAGAIN (retried after a delay); the next call,
  // issued once the slot has moved, gets MOVED (retried at once). Each call
  // must still keep its place: ioredis runs one auto-pipeline per node at a
  // time and retries it whole (src/redis/connection.ts, UNPIPELINED).
  const store = clusterStore('reshard');
  const q = 'reshard-fifo';
  const norm = (n: number) => normalizeEnqueue({ type: 't', queue: q, payload: { n } }, 1e6);
  const k = store.ctx.keys(q);
  await store.jobs.enqueue([norm(0)]);
  await store.jobs.enqueue([normalizeEnqueue({ type: 't', queue: q, payload: { n: -1 }, delayMs: 3_600_000 }, 1e6)]); // the delayed set exists too
  const nodes = cluster.nodes.map((n) => nodeClient(n.port));
  const slot = Number(await nodes[0].call('CLUSTER', 'KEYSLOT', k.waiting));
  const ids = await Promise.all(nodes.map(async (n) => String(await n.call('CLUSTER', 'MYID'))));
  const counts = await Promise.all(nodes.map(async (n) => Number(await n.call('CLUSTER', 'COUNTKEYSINSLOT', slot))));
  const from = counts.findIndex((c) => c > 0);
  const to = (from + 1) % nodes.length;
  const migrate = (keys: string[]) => nodes[from].call('MIGRATE', '127.0.0.1', cluster.nodes[to].port, '', 0, 5000, 'KEYS', ...keys);
  await nodes[to].call('CLUSTER', 'SETSLOT', slot, 'IMPORTING', ids[from]);
  await nodes[from].call('CLUSTER', 'SETSLOT', slot, 'MIGRATING', ids[to]);
  await migrate([k.events]); // keys split between the two masters: the script gets TRYAGAIN
  const first = store.jobs.enqueue([norm(1)]);
  await sleep(30);
  await migrate((await nodes[from].call('CLUSTER', 'GETKEYSINSLOT', slot, 1000)) as string[]);
  for (const n of [nodes[to], nodes[from], ...nodes]) await n.call('CLUSTER', 'SETSLOT', slot, 'NODE', ids[to]);
  const second = store.jobs.enqueue([norm(2)]);
  await Promise.all([first, second]);
  const got = await store.jobs.claim(q, 10, 10_000, 'w');
  expect(got.jobs.map((j) => (j.payload as { n: number }).n)).toEqual([0, 1, 2]);
});

test('WakeWaiter on a cluster: a wake-up that arrives between two waits is not lost', async () => {
  const store = clusterStore(`t-cl-wake-${randomBytes(3).toString('hex')}`);
  const { queues } = await queuesOnEveryShard(nodeClient(cluster.nodes[0].port), store, 'qwake');
  const [a, b] = queues;
  const keys = [a, b];
  const waiter = new RedisWakeWaiter(() => {
    const c = createRedis(
      { redisUrl: 'redis://unused', redisClusterNodes: cluster.nodes },
      { blocking: true },
    );
    clients.push(c);
    return c;
  }, true, (q) => store.ctx.keys(q).wake);
  try {
    // Idle: both queues' wake lists are watched; a token on `a` wakes the worker.
    const first = waiter.wait(keys, 3000);
    await sleep(200);
    await store.ctx.redis.rpush(store.ctx.keys(a).wake, 1);
    expect(await first).toBe(true);
    // Now the worker is busy claiming (not waiting) when `b` gets a job and its token.
    await store.ctx.redis.rpush(store.ctx.keys(b).wake, 1);
    await sleep(200);
    // The next wait must return at once, like a BLPOP on a single node finds the token in the list.
    const t0 = Date.now();
    expect(await waiter.wait(keys, 2000)).toBe(true);
    expect(Date.now() - t0).toBeLessThan(500);
  } finally {
    waiter.close();
  }
});

describe.each([
  ['QUEUES lists the queues', 'list'],
  ['QUEUES=*', 'star'],
])('worker process on the cluster, %s', (_title, mode) => {
  const prefix = `t-cl-${mode}-${randomBytes(3).toString('hex')}`;
  let store: RedisStores;
  let queues: string[];
  let worker: SluiceProcess;

  beforeAll(async () => {
    store = clusterStore(prefix);
    const admin = nodeClient(cluster.nodes[0].port);
    const picked = await queuesOnEveryShard(admin, store, `q${mode}`);
    queues = picked.queues;
    // One queue per master: the test really spans every shard.
    expect(queues).toHaveLength(3);
    expect(new Set(picked.owners).size).toBe(3);
    if (mode === 'star') {
      // `*` discovers queues from the registry: make them known before the worker starts.
      for (const q of queues) await store.queues.register(q);
    }
    const direct = cluster.nodes.map((n) => nodeClient(n.port));
    await Promise.all(direct.map((c) => c.script('FLUSH')));
    worker = await startSluice({
      REDIS_CLUSTER_NODES: cluster.nodesEnv,
      REDIS_URL: 'redis://127.0.0.1:1', // must not be used
      REDIS_PREFIX: prefix,
      QUEUES: mode === 'star' ? '*' : queues.join(','),
      WORKER_CONCURRENCY: '16',
      SHUTDOWN_GRACE_MS: '1000',
    });
    procs.push(worker);
    // The process compiled every script on every master at boot (RedisModule → verify).
    const shas = loadScripts().map((sc) => createHash('sha1').update(sc.source).digest('hex'));
    for (const c of direct) expect(await c.script('EXISTS', ...shas)).toEqual(shas.map(() => 1));
  }, 60_000);

  test('200 diag.echo per queue (a quarter delayed 500 ms) each complete exactly once', async () => {
    const ids = await enqueueAll(store, queues, 200);
    await waitUntil(
      'every job completed',
      async () => (await countCompleted(store, queues)) >= ids.size,
      30_000,
    );
    await sleep(500); // a duplicate run would show up now
    await expectExactlyOnce(store, queues, ids);
    expect(worker.output()).not.toMatch(/CROSSSLOT|claim failed|worker loop crashed/);
  });

  test('an idle worker wakes up on an enqueue on any shard within a fraction of the poll interval', async () => {
    // The worker is idle now, blocked on the wake lists of queues on three different masters.
    await sleep(300);
    const latencies: number[] = [];
    for (const queue of queues) {
      const [r] = await store.jobs.enqueue([
        normalizeEnqueue({ queue, type: 'diag.echo', payload: { wake: queue } }, 1e6),
      ]);
      await waitUntil(
        `job on ${queue} completed`,
        async () => (await store.jobs.getJob(queue, r.id))?.status === 'completed',
        10_000,
      );
      const t = (await trails(store, [queue])).get(r.id)!;
      latencies.push(t.claimedAt! - t.enqueuedAt!);
      // Redis clock on the queue's master; the safety-net poll would take 1000–5000 ms.
      expect(t.claimedAt! - t.enqueuedAt!).toBeLessThan(mode === 'star' ? 500 : 1000);
      await sleep(200);
    }
    process.stdout.write(`cluster wake-up latency (${mode}): ${latencies.join(', ')} ms\n`);
  });

  test('the worker process is still running with no errors', () => {
    expect(worker.proc.exitCode).toBeNull();
    expect(worker.output()).not.toMatch(/"level":(50|60)/);
  });
});
