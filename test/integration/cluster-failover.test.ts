import { randomBytes } from 'node:crypto';
import Redis, { Cluster } from 'ioredis';
import { normalizeEnqueue } from '../../src/core/job-options';
import { createRedis } from '../../src/redis/connection';
import { createRedisStores, type RedisStores } from '../../src/redis/stores';
import { killAll, SluiceProcess, startSluice } from '../support/process';
import {
  auditTrails,
  checkRunsOnce,
  clusterNodes,
  infoFields,
  JobTrail,
  RedisClusterHandle,
  RedisServer,
  removeDir,
  sleepMs,
  startRedisCluster,
  stopAllRedisServers,
  waitUntil,
} from '../support/redis-server';

/**
 * Redis Cluster under faults (issue 19): three masters with a replica each
 * (cluster-node-timeout 2000 ms, so a replica takes over some 4 s after its
 * master dies), two Sluice processes (worker + scheduler) on six queues, two
 * per shard.
 *
 * 1. Busy: the master of the first queue is killed (SIGKILL) mid-run, once
 *    its replica holds every enqueue. The replica takes over; every job
 *    accepted before the kill completes; a job claimed twice was put back in
 *    between (`stalled` by the reaper, or `released` by a worker whose late
 *    claim found no free slot); the other shards keep working during the
 *    failover; jobs enqueued on the failed-over shard right after it run.
 * 2. Idle: with the workers blocked on every queue's wake list, the master of
 *    another shard is killed; once its replica has taken over, a job
 *    enqueued there wakes a worker at once (its blocking connection left
 *    the dead node), not at the 5 s safety-net claim.
 * No worker process exits.
 */

jest.setTimeout(120_000);

const PER_QUEUE = 350; // 6 queues: 2,100 jobs
const SLEEP_MS = 40;
const prefix = `t-clfo-${randomBytes(3).toString('hex')}`;

let cluster: RedisClusterHandle;
const procs: SluiceProcess[] = [];
const clients: (Redis | Cluster)[] = [];
/** Enqueues go through a store as an API process has it (the auto-pipelined shared connection)... */
let store: RedisStores;
/**
 * ...what the test reads, through a connection of its own without
 * auto-pipelining, so that every read is routed and redirected on its own:
 * the observer is not what is tested.
 */
let reader: RedisStores;
/** Two queue names per shard: `byShard[i]` live on `cluster.shards[i]`. */
let byShard: string[][];
let queues: string[];

beforeAll(async () => {
  cluster = await startRedisCluster(3, 7301, { replicas: 1, nodeTimeoutMs: 2000 });
  const nodes = cluster.allNodesEnv.split(',').map((hp) => ({ host: '127.0.0.1', port: Number(hp.split(':')[1]) }));
  const redis = createRedis({ redisUrl: 'redis://unused', redisClusterNodes: nodes });
  const readConn = createRedis({ redisUrl: 'redis://unused', redisClusterNodes: nodes }, { blocking: true });
  clients.push(redis, readConn);
  store = createRedisStores(redis, prefix);
  reader = createRedisStores(readConn, prefix);
  byShard = await twoQueuesPerShard(nodeClient(cluster.shards[1].master));
  // Interleaved, a queue of shard 0 (killed first) first: the workers' claim loop meets it first every turn.
  queues = [0, 1].flatMap((i) => byShard.map((l) => l[i]));
  const env = {
    REDIS_CLUSTER_NODES: cluster.allNodesEnv,
    REDIS_URL: 'redis://127.0.0.1:1', // must not be used
    REDIS_PREFIX: prefix,
    QUEUES: queues.join(','),
    ROLE: 'worker,scheduler',
    WORKER_CONCURRENCY: '8',
    LOCK_TTL_MS: '2000',
    HEARTBEAT_INTERVAL_MS: '500',
    REAPER_INTERVAL_MS: '500',
    SHUTDOWN_GRACE_MS: '1000',
  };
  procs.push(...(await Promise.all([startSluice(env), startSluice(env)])));
}, 90_000);

afterAll(async () => {
  await killAll(procs);
  clients.forEach((c) => c.disconnect());
  await stopAllRedisServers();
  removeDir(cluster?.dir);
});

const clientsOf = new Map<RedisServer, Redis[]>();

function nodeClient(server: RedisServer): Redis {
  const c = server.client();
  c.on('error', () => undefined);
  clients.push(c);
  clientsOf.set(server, [...(clientsOf.get(server) ?? []), c]);
  return c;
}

/** Every job's audit trail over the given queues' events streams. */
async function trails(s: RedisStores, qs: string[]): Promise<Map<string, JobTrail>> {
  const out = new Map<string, JobTrail>();
  for (const q of qs)
    for (const [id, t] of await auditTrails(s.ctx.redis as any, s.ctx.keys(q).events)) out.set(id, t);
  return out;
}

async function completedIn(qs: string[]): Promise<number> {
  let n = 0;
  for (const t of (await trails(reader, qs)).values()) n += t.count.completed ?? 0;
  return n;
}

/** A poll predicate that counts a failed read (the cluster mid-failover) as "not yet". */
function tolerant(pred: () => Promise<boolean>): () => Promise<boolean> {
  return () => pred().catch(() => false);
}

async function twoQueuesPerShard(admin: Redis): Promise<string[][]> {
  const ranges: [number, number, number][] = [];
  for (const n of await clusterNodes(admin))
    for (const r of n.slots) {
      const [a, b] = r.split('-').map(Number);
      ranges.push([a, b ?? a, n.port]);
    }
  const out = cluster.shards.map(() => [] as string[]);
  for (let i = 0; out.some((l) => l.length < 2) && i < 1000; i++) {
    const q = `fo-${i}`;
    const slot = Number(await admin.cluster('KEYSLOT', reader.ctx.keys(q).waiting));
    const port = ranges.find(([a, b]) => slot >= a && slot <= b)![2];
    const list = out[cluster.shards.findIndex((s) => s.master.port === port)];
    if (list.length < 2) list.push(q);
  }
  return out;
}

/**
 * SIGKILLs the master of `shard`, then waits until its replica is master,
 * every surviving node says cluster_state:ok, and `admin` flags the dead one
 * `fail`. Returns the times (epoch ms) of the kill and of then, and how long
 * some node said cluster_state:fail meanwhile (from the dead master's FAIL
 * flag to its replica's promotion the cluster lacks slots, and with the
 * default cluster-require-full-coverage yes every node refuses every
 * command with CLUSTERDOWN, the other shards' too).
 */
async function killMaster(shard: number, admin: Redis): Promise<{ killedAt: number; promotedAt: number; downMs: number }> {
  const { master: victim, replicas } = cluster.shards[shard];
  const heir = nodeClient(replicas[0]);
  const survivors = cluster.shards
    .flatMap((s, i) => (i === shard ? s.replicas : [s.master, ...s.replicas]))
    .filter((s) => s.running)
    .map(nodeClient);
  // The test's own clients of the victim go first: ioredis keeps a 2 s timer for a connection that dies under it.
  for (const c of clientsOf.get(victim) ?? []) {
    c.disconnect();
    clients.splice(clients.indexOf(c), 1);
  }
  await victim.kill(); // SIGKILL: no shutdown, connections drop
  const killedAt = Date.now();
  let downFrom = 0;
  let downTo = 0;
  await waitUntil(
    `the replica of shard ${shard} promoted and cluster_state ok everywhere`,
    async () => {
      const infos = await Promise.all(survivors.map((c) => c.cluster('INFO') as Promise<string>));
      if (infos.some((i) => /cluster_state:fail/.test(i))) downTo = Date.now();
      if (downTo && !downFrom) downFrom = downTo;
      if ((await infoFields(heir, 'replication')).role !== 'master') return false;
      const view = await clusterNodes(admin);
      return (
        infos.every((i) => /cluster_state:ok/.test(i)) &&
        view.find((n) => n.port === replicas[0].port)!.flags.includes('master') &&
        view.find((n) => n.port === victim.port)!.flags.includes('fail')
      );
    },
    30_000,
    50,
  );
  return { killedAt, promotedAt: Date.now(), downMs: downTo - downFrom };
}

/** The worker log lines (pino JSON) written after `from` (per process), warnings and up, plus "claiming again". */
function saidSince(from: number[]): string[][] {
  return procs.map((p, i) => {
    const msgs: string[] = [];
    for (const line of p.output().slice(from[i]).split('\n'))
      if (line.startsWith('{')) {
        try {
          const o = JSON.parse(line) as { level: number; msg: string };
          if (o.level >= 40 || /claiming again/.test(o.msg)) msgs.push(o.msg);
        } catch {
          /* not a log line */
        }
      }
    return msgs;
  });
}

function summary(msgs: string[]): string {
  const counts: Record<string, number> = {};
  for (const m of msgs) counts[m] = (counts[m] ?? 0) + 1;
  return JSON.stringify(counts);
}

function expectWorkersAlive(said: string[][]): void {
  for (const msgs of said) {
    // A worker that paused claims from the failed shard said when it claimed from every queue again.
    const paused = msgs.indexOf('claim failed: redis unavailable, pausing claims');
    if (paused >= 0) expect(msgs.lastIndexOf('redis is back: claiming again')).toBeGreaterThan(paused);
  }
  for (const p of procs) {
    expect(p.proc.exitCode).toBeNull();
    expect(p.proc.signalCode).toBeNull();
    expect(p.output()).not.toMatch(/worker loop crashed|"level":60/);
  }
}

test('a master is killed mid-run: its replica takes over, every job completes, the other shards go on', async () => {
  expect(cluster.shards).toHaveLength(3);
  for (const s of cluster.shards) expect(s.replicas).toHaveLength(1);
  const admin = nodeClient(cluster.shards[1].master); // survives this kill
  const victimQueues = byShard[0];

  const inputs = queues.flatMap((queue) =>
    Array.from({ length: PER_QUEUE }, (_, i) =>
      // Attempts to spare: a job may stall more than once around a failover; the budget is not what is tested here.
      normalizeEnqueue({ queue, type: 'diag.sleep', payload: { ms: SLEEP_MS, i }, maxAttempts: 10 }, 1e6),
    ),
  );
  const ids = (await store.jobs.enqueue(inputs)).map((r) => r.id);
  const enqueuedAt = Date.now();
  expect(new Set(ids).size).toBe(queues.length * PER_QUEUE);

  // Every enqueue reached the victim's replica: compare replication offsets.
  const target = Number((await infoFields(nodeClient(cluster.shards[0].master), 'replication')).master_repl_offset);
  const heirClient = nodeClient(cluster.shards[0].replicas[0]);
  await waitUntil(
    "the victim's replica caught up with the enqueues",
    async () => Number((await infoFields(heirClient, 'replication')).slave_repl_offset) >= target,
    10_000,
    20,
  );

  // Mid-run on the victim shard: some of its jobs done, most still to do.
  const victimTotal = victimQueues.length * PER_QUEUE;
  const waitingOnVictim = async () => {
    let n = 0;
    for (const q of victimQueues) n += (await reader.queues.liveCounts(q)).waiting;
    return n;
  };
  await waitUntil('a fifth of the victim shard claimed', async () => (await waitingOnVictim()) <= victimTotal * 0.8, 60_000, 20);
  const waitingAtKill = await waitingOnVictim();
  expect(waitingAtKill).toBeGreaterThan(victimTotal * 0.3);
  const outAtKill = procs.map((p) => p.output().length);

  const { killedAt, promotedAt, downMs } = await killMaster(0, admin);
  const failoverMs = promotedAt - killedAt;

  // Jobs enqueued right after the failover on the failed-over shard run (behind the backlog, at high priority).
  const lateAt = Date.now();
  const lateInputs = victimQueues.flatMap((queue) =>
    Array.from({ length: 10 }, (_, i) =>
      normalizeEnqueue({ queue, type: 'diag.sleep', payload: { ms: 1, late: i }, priority: 'high' }, 1e6),
    ),
  );
  const lateIds = (await store.jobs.enqueue(lateInputs)).map((r) => r.id);
  await waitUntil(
    'the jobs enqueued after the failover completed',
    tolerant(async () => {
      const t = await trails(reader, victimQueues);
      return lateIds.every((id) => t.get(id)?.count.completed);
    }),
    20_000,
    100,
  );
  const lateMs = Date.now() - lateAt;

  // Every job accepted before the kill completes.
  const allIds = [...ids, ...lateIds];
  await waitUntil(
    'every job completed',
    tolerant(async () => (await completedIn(queues)) >= allIds.length),
    60_000,
    250,
  ).catch(async (e: Error) => {
    const t = await trails(reader, queues);
    const missing = allIds.filter((id) => !t.get(id)?.count.completed);
    throw new Error(
      `${e.message}: ${missing.length} not completed, e.g. ${missing
        .slice(0, 3)
        .map((id) => `${id}: ${t.get(id)?.events.join(',')}`)
        .join('; ')}\n${procs.map((p) => p.output().slice(-3000)).join('\n---\n')}`,
    );
  });
  // Nothing is left active or waiting, so no lease is left to expire and re-run a job later.
  await waitUntil(
    'every queue empty',
    tolerant(async () => {
      for (const q of queues) {
        const c = await reader.queues.liveCounts(q);
        if (c.waiting || c.active || c.delayed || c.failed) return false;
      }
      return true;
    }),
    10_000,
    100,
  );

  const all = await trails(reader, queues);
  const { problems, reruns, stalled, released, rerun } = checkRunsOnce(allIds, all);
  expect(problems.slice(0, 20)).toEqual([]);
  const queueOf = new Map<string, string>([
    ...ids.map((id, i): [string, string] => [id, inputs[i].queue]),
    ...lateIds.map((id, i): [string, string] => [id, lateInputs[i].queue]),
  ]);
  // Claims on the other shards (Redis clock, same host) before the kill and between the kill and the promotion.
  const others = [...all].filter(([id]) => !victimQueues.includes(queueOf.get(id)!)).map(([, t]) => t.claimedAt!);
  const claimedBefore = others.filter((at) => at < killedAt && at >= enqueuedAt).length;
  const claimedDuring = others.filter((at) => at >= killedAt && at <= promotedAt).length;
  const rateBefore = claimedBefore / ((killedAt - enqueuedAt) / 1000);
  const rateDuring = claimedDuring / (failoverMs / 1000);
  const claimedAgain = [...all].filter(([, t]) => t.count.claimed > 1);
  const onVictim = claimedAgain.filter(([id]) => victimQueues.includes(queueOf.get(id)!)).length;
  const elsewhere = claimedAgain
    .filter(([id]) => !victimQueues.includes(queueOf.get(id)!))
    .map(([id, t]) => `${queueOf.get(id)}/${id}: ${t.events.join(',')}`);

  const said = saidSince(outAtKill);
  process.stdout.write(
    `cluster failover (busy): ${ids.length} jobs, ${waitingAtKill}/${victimTotal} waiting on the victim shard at the kill; ` +
      `replica promoted ${failoverMs} ms after the kill (the whole cluster down for ${downMs} ms of it); the other shards' jobs claimed meanwhile ${claimedDuring} ` +
      `(${rateDuring.toFixed(0)}/s; ${rateBefore.toFixed(0)}/s before the kill); 20 jobs enqueued after the failover done in ${lateMs} ms; ` +
      `claimed again: ${reruns} jobs (${onVictim} on the failed shard), stalled events ${stalled}, released ${released}` +
      `${rerun.length ? ` (e.g. ${rerun.slice(0, 2).join('; ')})` : ''}` +
      `${elsewhere.length ? `; claimed again off the failed shard: ${elsewhere.slice(0, 3).join('; ')}` : ''}\n` +
      said.map((m, i) => `worker ${i} after the kill: ${summary(m)}\n`).join(''),
  );

  // The other shards kept working while the victim's slots had no master: a
  // worker's claim on the dead shard holds its loop up for half a second
  // (CLAIM_STALL_MS in src/workers/runtime), not for the whole failover, when
  // the workers (2 × 8 slots) would claim nothing on the other shards.
  expect(claimedDuring).toBeGreaterThan(2 * 16);
  expect(lateMs).toBeLessThan(20_000);
  expectWorkersAlive(said);
});

test('idle workers blocked on the wake lists lose a master: once its replica took over, an enqueue there wakes them at once', async () => {
  const admin = nodeClient(cluster.shards[2].master); // survives this kill
  const shardQueues = byShard[1];
  // Idle: every worker blocks on the six wake lists (its claims found nothing).
  await sleepMs(500);
  const from = procs.map((p) => p.output().length);
  const { killedAt, promotedAt, downMs } = await killMaster(1, admin);
  // Each worker that noticed the failed shard (a claim failed) has claimed from it again; one
  // that did not has had its 5 s idle wait end since the promotion, so it claimed since.
  await waitUntil(
    'every worker past the failover',
    () =>
      saidSince(from).every((msgs) => {
        const paused = msgs.indexOf('claim failed: redis unavailable, pausing claims');
        return paused >= 0 ? msgs.lastIndexOf('redis is back: claiming again') > paused : Date.now() - promotedAt > 5500;
      }),
    20_000,
    100,
  );

  const latencies: number[] = [];
  for (let round = 0; round < 3; round++)
    for (const queue of shardQueues) {
      const [r] = await store.jobs.enqueue([normalizeEnqueue({ queue, type: 'diag.echo', payload: { round } }, 1e6)]);
      await waitUntil(
        `job on ${queue} completed`,
        tolerant(async () => (await reader.jobs.getJob(queue, r.id))?.status === 'completed'),
        15_000,
        50,
      );
      const t = (await trails(reader, [queue])).get(r.id)!;
      latencies.push(t.claimedAt! - t.enqueuedAt!);
      await sleepMs(300 + Math.floor(Math.random() * 700));
    }
  const said = saidSince(from);
  process.stdout.write(
    `cluster failover (idle): replica promoted ${promotedAt - killedAt} ms after the kill (the whole cluster down for ${downMs} ms of it); wake-up latency on the failed-over shard ${latencies.join(', ')} ms\n` +
      said.map((m, i) => `worker ${i} after the kill: ${summary(m)}\n`).join(''),
  );
  // Redis clock on the queue's new master; the safety-net claim would take up to 5000 ms.
  for (const ms of latencies) expect(ms).toBeLessThan(1000);
  expectWorkersAlive(said);
});
