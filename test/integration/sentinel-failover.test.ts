import { randomBytes } from 'node:crypto';
import { createServer, connect, type Server, type Socket } from 'node:net';
import Redis from 'ioredis';
import { loadConfig } from '../../src/config/config';
import { normalizeEnqueue } from '../../src/core/job-options';
import { createRedis, SOCKET_TIMEOUT_MS } from '../../src/redis/connection';
import { createRedisStores, type RedisStores } from '../../src/redis/stores';
import { RedisScripts } from '../../src/redis/scripts';
import { killAll, SluiceProcess, startSluice } from '../support/process';
import { auditTrails, checkRunsOnce, removeDir, sleepMs, startRedisServer, stopAllRedisServers, waitUntil } from '../support/redis-server';
import { startSentinelSet, type SentinelSet } from '../support/sentinel';

/**
 * Redis through Sentinel (API.md "Redis through Sentinel"): one master, one
 * replica and three Sentinels (quorum 2, down after 1 s), two Sluice worker
 * processes that know only the Sentinels. The master is SIGKILLed mid-run:
 * the Sentinels promote the replica, every process follows it without a
 * restart, every job accepted before the kill completes, a job runs twice
 * only where a `stalled` event says the reaper put it back, and new jobs flow
 * within seconds. The credentials travel as configured: the data nodes'
 * password and database number from REDIS_URL (whose host and port are not
 * used), the Sentinels' own password from REDIS_SENTINEL_PASSWORD.
 */

jest.setTimeout(120_000);

const JOBS = 2000;
const AFTER_JOBS = 50;
const MAIN = 'main';
const AFTER = 'after';
const IDLE = 'idle';
const EXT = 'ext';
const DB = 2;
const prefix = `t-sentinel-${randomBytes(3).toString('hex')}`;
let set: SentinelSet;
let redis: Redis;
let store: RedisStores;
let workers: SluiceProcess[] = [];

/** The Redis part of the environment every process and client of the failover test gets. */
const redisEnv = (): Record<string, string> => ({
  // Host and port are not used with REDIS_SENTINELS: port 1 has nothing behind it.
  REDIS_URL: `redis://:${set.password}@127.0.0.1:1/${DB}`,
  REDIS_SENTINELS: set.sentinelsEnv,
  REDIS_SENTINEL_NAME: set.name,
  REDIS_SENTINEL_PASSWORD: set.sentinelPassword!,
});

/** Clients on the data nodes, disconnected at the end whatever happened (they reconnect for ever). */
const clients: Redis[] = [];
const track = (r: Redis) => (clients.push(r), r);

afterAll(async () => {
  await killAll(workers);
  redis?.disconnect();
  clients.forEach((c) => c.disconnect());
  await stopAllRedisServers();
  removeDir(set?.dir);
});

test('REDIS_SENTINELS with REDIS_CLUSTER_NODES: the process refuses to start, saying why', async () => {
  const p = await startSluice({ REDIS_SENTINELS: '127.0.0.1:26379', REDIS_CLUSTER_NODES: '127.0.0.1:7000' }, { waitReady: false });
  const { code } = await p.exited;
  expect(code).toBe(2);
  expect(p.output()).toContain('configuration error: REDIS_SENTINELS and REDIS_CLUSTER_NODES are both set');
});

test(`${JOBS} diag.sleep jobs through a Sentinel failover (master SIGKILLed mid-run): each completed, new jobs flow within seconds`, async () => {
  const t0 = Date.now();
  set = await startSentinelSet({ name: 'sluice-test', password: 'data-pw', sentinelPassword: 'sentinel-pw', downAfterMs: 1000, failoverTimeoutMs: 5000 });
  const tSet = Date.now();
  redis = createRedis(loadConfig(redisEnv())) as Redis;
  const scripts = new RedisScripts(redis);
  await scripts.verify();
  store = createRedisStores(redis, prefix, undefined, scripts);

  const common = {
    ...redisEnv(),
    REDIS_PREFIX: prefix,
    // AFTER first: the jobs enqueued after the failover do not wait behind the backlog of MAIN.
    QUEUES: `${AFTER},${MAIN}`,
    ROLE: 'worker,scheduler',
    WORKER_CONCURRENCY: '10',
    LOCK_TTL_MS: '2000',
    HEARTBEAT_INTERVAL_MS: '500',
    REAPER_INTERVAL_MS: '500',
    SHUTDOWN_GRACE_MS: '1000',
  };
  // A third process is idle across the failover: its in-process worker blocked in BLPOP on IDLE's wake
  // list, its API holding a long poll on EXT (a queue only external workers take).
  const idle = { ...common, QUEUES: IDLE, ROLE: 'api,worker' };
  workers = await Promise.all([startSluice(common), startSluice(common), startSluice(idle)]);
  const tWorkers = Date.now();
  const pids = workers.map((w) => w.proc.pid);
  const longPoll = fetch(`${workers[2].url()}/queues/${EXT}/claim`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ workerId: 'ext-1', waitMs: 30_000 }),
  }).then(async (r) => ({ status: r.status, body: (await r.json()) as { jobs: { id: string }[] }, at: Date.now() }));

  const ids: string[] = [];
  for (let b = 0; b < JOBS; b += 500) {
    const batch = Array.from({ length: 500 }, (_, i) => normalizeEnqueue({ queue: MAIN, type: 'diag.sleep', payload: { ms: 40, n: b + i } }, 1e6));
    ids.push(...(await store.jobs.enqueue(batch)).map((r) => r.id));
  }
  expect(new Set(ids).size).toBe(JOBS);
  // Every accepted job is on the replica: WAIT returns once it has acknowledged all this connection wrote.
  expect(await redis.call('WAIT', 1, 10_000)).toBe(1);
  const masterNode = track(set.nodeClient(set.master, DB));
  const replicaNode = track(set.nodeClient(set.replica, DB));
  const offsets = async () => ({
    master: Number(/master_repl_offset:(\d+)/.exec(await masterNode.info('replication'))![1]),
    replica: Number(/slave_repl_offset:(\d+)/.exec(await replicaNode.info('replication'))![1]),
  });
  const enqueuedAt = await offsets();
  expect(enqueuedAt.replica).toBeGreaterThan(0);

  // Kill the master once a good part, but far from all, of the jobs has been claimed.
  const k = store.ctx.keys(MAIN);
  await waitUntil('400 jobs claimed', async () => (await masterNode.zcard(k.waiting)) <= JOBS - 400, 60_000, 5);
  const atKill = { waiting: await masterNode.zcard(k.waiting), active: await masterNode.zcard(k.active), offsets: await offsets() };
  masterNode.disconnect();
  expect(atKill.waiting).toBeGreaterThan(200); // really mid-run
  const tKill = Date.now();
  await set.master.kill();

  await set.waitForMaster(set.replica.port, 30_000);
  const tSwitch = Date.now();
  // Sluice writes again on the new master (claims, acks: the events stream grows).
  const xlenAtSwitch = await replicaNode.xlen(k.events);
  await waitUntil('a write of Sluice on the new master', async () => (await replicaNode.xlen(k.events)) > xlenAtSwitch, 30_000, 20);
  const tResumed = Date.now();
  // The old master comes back, empty (no persistence) and a master as far as it knows, until the
  // Sentinels make it a replica of the new one (they wait ~8 s to do so): nothing of Sluice may write to it.
  await set.master.start();
  const tBack = Date.now();

  // The BLPOP and the long poll that waited across the failover wake up for a job each.
  const tWake = Date.now();
  const [idleId] = (await store.jobs.enqueue([normalizeEnqueue({ queue: IDLE, type: 'diag.sleep', payload: { ms: 1 } }, 1e6)])).map((r) => r.id);
  const [extId] = (await store.jobs.enqueue([normalizeEnqueue({ queue: EXT, type: 'ext.job', payload: {} }, 1e6)])).map((r) => r.id);
  const polled = await longPoll;
  if (polled.status !== 200) throw new Error(`the long poll answered ${polled.status} ${JSON.stringify(polled.body)}`);
  expect(polled.body.jobs.map((j) => j.id)).toEqual([extId]);
  const longPollMs = polled.at - tWake;
  await waitUntil(`the ${IDLE} job completed`, async () => !!(await auditTrails(replicaNode, store.ctx.keys(IDLE).events)).get(idleId)?.count.completed, 30_000, 20);
  const idleMs = Date.now() - tWake;
  // Both well within the 5 s safety-net claim: woken by the job's wake token, not by a timer.
  expect(longPollMs).toBeLessThan(4000);
  expect(idleMs).toBeLessThan(4000);

  // New jobs, enqueued through the Sentinels after the failover, flow.
  const tAfter = Date.now();
  const afterIds = (
    await store.jobs.enqueue(Array.from({ length: AFTER_JOBS }, (_, i) => normalizeEnqueue({ queue: AFTER, type: 'diag.sleep', payload: { ms: 1, n: i } }, 1e6)))
  ).map((r) => r.id);
  const ka = store.ctx.keys(AFTER);
  await waitUntil(
    `the ${AFTER_JOBS} jobs enqueued after the failover completed`,
    async () => {
      const trails = await auditTrails(replicaNode, ka.events);
      return afterIds.every((id) => trails.get(id)?.count.completed);
    },
    30_000,
    50,
  );
  const afterMs = Date.now() - tAfter;

  await waitUntil(
    'every job accepted before the kill completed',
    async () => {
      const trails = await auditTrails(replicaNode, k.events);
      return ids.every((id) => trails.get(id)?.count.completed);
    },
    60_000,
    250,
  ).catch((e: Error) => {
    throw new Error(`${e.message}\nworker output (tail):\n${workers.map((w) => w.output().slice(-2000)).join('\n---\n')}`);
  });
  const tDone = Date.now();
  // A lease lost in the failover is reaped (REAPER_INTERVAL_MS 500) and run again within ~2.5 s: give it the time to show.
  await sleepMs(2500);

  // The trails are read from the new master: what the old one had not replicated is gone from them, and from Redis.
  const trails = await auditTrails(replicaNode, k.events);
  const { problems, reruns, stalled, rerun } = checkRunsOnce(ids, trails);
  expect(problems.slice(0, 20)).toEqual([]);
  expect(checkRunsOnce(afterIds, await auditTrails(replicaNode, ka.events)).problems).toEqual([]);
  for (const id of ids) {
    const job = await store.jobs.getJob(MAIN, id);
    expect(job?.status).toBe('completed');
    expect(job?.executionSeq).toBe(trails.get(id)!.count.claimed);
  }
  expect(await store.queues.liveCounts(MAIN)).toEqual({ waiting: 0, delayed: 0, active: 0, failed: 0 });
  expect(afterMs).toBeLessThan(15_000);

  const oldNode = track(set.nodeClient(set.master, DB));
  await waitUntil(
    'the old master a replica of the new one',
    async () => {
      const info = await oldNode.info('replication');
      return /role:slave/.test(info) && new RegExp(`master_port:${set.replica.port}\\b`).test(info) && /master_link_status:up/.test(info);
    },
    // Sentinel converts the restarted old master on its own timers; once, under the loaded full suite, 30 s was not enough.
    60_000,
    200,
  );
  const lateIds = (await store.jobs.enqueue(Array.from({ length: 10 }, (_, i) => normalizeEnqueue({ queue: AFTER, type: 'diag.sleep', payload: { ms: 1, n: i } }, 1e6)))).map(
    (r) => r.id,
  );
  await waitUntil(
    'the jobs enqueued with the old master back completed',
    async () => {
      const t = await auditTrails(replicaNode, ka.events);
      return lateIds.every((id) => t.get(id)?.count.completed);
    },
    20_000,
    50,
  );
  // Replicated from the new master, never written to by a client: the old master holds what the new one holds.
  expect(await oldNode.dbsize()).toBe(await replicaNode.dbsize());
  const tLate = Date.now();
  oldNode.disconnect();

  // The history mirror's thread (ROLE audit beside another role) opens its own connection, through the Sentinels too.
  const mirror = await startSluice({ ...redisEnv(), REDIS_PREFIX: prefix, ROLE: 'scheduler,audit' });
  workers.push(mirror);
  await mirror.waitFor(/"thread":true[^\n]*"msg":"audit writer started"|"msg":"audit writer started"[^\n]*"thread":true/);
  const mirrored = async (queue: string) => {
    const groups = (await replicaNode.xinfo('GROUPS', store.ctx.keys(queue).events)) as unknown[][];
    const g = groups.map((f) => new Map(Array.from({ length: f.length / 2 }, (_, i) => [String(f[2 * i]), f[2 * i + 1]]))).find((m) => m.get('name') === 'sluice-audit');
    return !!g && g.get('lag') === 0 && g.get('pending') === 0;
  };
  await waitUntil('both queues mirrored to PostgreSQL by the writer thread', async () => (await mirrored(MAIN)) && (await mirrored(AFTER)), 60_000, 200);
  const tMirrored = Date.now();
  replicaNode.disconnect();

  // The same processes did it all: none exited or restarted.
  for (const [i, w] of workers.slice(0, 3).entries()) {
    expect(w.proc.pid).toBe(pids[i]);
    expect(w.proc.exitCode).toBeNull();
    expect(w.proc.signalCode).toBeNull();
    expect(w.output().match(/"msg":"sluice listening/g)).toHaveLength(1);
  }
  process.stdout.write(
    `sentinel-failover: set up ${tSet - t0} ms, workers started ${tWorkers - tSet} ms, kill ${tKill - tWorkers} ms later; ${JOBS} jobs, replicated offset ${enqueuedAt.replica} after enqueue; at the kill waiting/active ${atKill.waiting}/${atKill.active}, ` +
      `master/replica offsets ${atKill.offsets.master}/${atKill.offsets.replica}; kill → Sentinels name the replica ${tSwitch - tKill} ms, → Sluice writes on it ${tResumed - tKill} ms; ` +
      `blocked worker woke and ran a job ${idleMs} ms, long poll answered ${longPollMs} ms after the enqueue; ${AFTER_JOBS} jobs enqueued after the failover completed in ${afterMs} ms; all done ${tDone - tKill} ms after the kill; re-runs ${reruns}, stalled events ${stalled}` +
      `${rerun.length ? ` (${rerun.slice(0, 2).join('; ')})` : ''}; old master back as a replica and 10 more jobs done ${tLate - tBack} ms after its restart; mirrored ${tMirrored - tLate} ms later\n`,
  );
});

test('a master that freezes (SIGSTOP) without closing its connections: the processes leave it after the socket timeout and go on with the new master', async () => {
  // After the first test: set.replica is the master, set.master its replica; the worker processes still run.
  const frozen = set.node(await set.masterPort());
  const next = frozen === set.master ? set.replica : set.master;
  const pids = workers.map((w) => w.proc.pid);
  const t0 = Date.now();
  frozen.proc!.kill('SIGSTOP');
  try {
    await set.waitForMaster(next.port, 30_000);
    const tSwitch = Date.now();
    // A new client finds the new master at once; the processes' connections still hang on the frozen one.
    const fresh = createRedis(loadConfig(redisEnv())) as Redis;
    clients.push(fresh);
    const s2 = createRedisStores(fresh, prefix);
    const ids = (await s2.jobs.enqueue(Array.from({ length: 20 }, (_, i) => normalizeEnqueue({ queue: AFTER, type: 'diag.sleep', payload: { ms: 1, frozen: i } }, 1e6)))).map((r) => r.id);
    const nextNode = track(set.nodeClient(next, DB));
    const events = store.ctx.keys(AFTER).events;
    await waitUntil(
      'the jobs enqueued on the new master completed',
      async () => {
        const t = await auditTrails(nextNode, events);
        return ids.every((id) => t.get(id)?.count.completed);
      },
      SOCKET_TIMEOUT_MS + 20_000,
      100,
    );
    const tDone = Date.now();
    for (const [i, w] of workers.entries()) {
      expect(w.proc.pid).toBe(pids[i]);
      expect(w.proc.exitCode).toBeNull();
    }
    process.stdout.write(`sentinel-failover (frozen master): SIGSTOP → new master named ${tSwitch - t0} ms, 20 new jobs done ${tDone - t0} ms after the freeze (socket timeout ${SOCKET_TIMEOUT_MS} ms)\n`);
  } finally {
    frozen.proc!.kill('SIGCONT');
  }
});

/**
 * A TCP forwarder whose target can change: connections made after
 * `target(port)` go to the new port, open ones stay where they were, as a
 * DNS name or a load balancer in front of a managed Redis behaves in a failover.
 */
function forwarder(first: number): Promise<{ port: number; target(port: number): void; close(): void }> {
  let to = first;
  const open = new Set<Socket>();
  const server: Server = createServer((client) => {
    const up = connect(to, '127.0.0.1');
    for (const s of [client, up]) {
      open.add(s);
      s.on('close', () => open.delete(s));
      s.on('error', () => (s === client ? up : client).destroy());
    }
    client.pipe(up).pipe(client);
  });
  return new Promise((res) =>
    server.listen(0, '127.0.0.1', () =>
      res({
        port: (server.address() as { port: number }).port,
        target: (p) => (to = p),
        close: () => {
          for (const s of open) s.destroy();
          server.close();
        },
      }),
    ),
  );
}

test('READONLY after the master was demoted under an open connection: commands reconnect and go on (bull #1947); a replica behind REDIS_URL is refused at start', async () => {
  const a = await startRedisServer({ name: 'readonly-a' });
  const b = await startRedisServer({ name: 'readonly-b' });
  const fwd = await forwarder(a.port);
  const url = `redis://127.0.0.1:${fwd.port}`;
  const client = createRedis({ redisUrl: url, redisClusterNodes: null }) as Redis;
  const blocking = createRedis({ redisUrl: url, redisClusterNodes: null }, { blocking: true }) as Redis;
  const admin = [a.client(), b.client()];
  try {
    expect(await client.set('k', 'on-a')).toBe('OK');
    // A BLPOP blocked on A when A turns replica: A answers it UNBLOCKED.
    const popped = blocking.blpop('wake', 20);
    await waitUntil('the BLPOP blocked on A', async () => /blocked_clients:1/.test(await admin[0].info('clients')), 10_000, 20);

    // The failover: B becomes the master behind the address, A a replica of B; the clients' connections stay open to A.
    fwd.target(b.port);
    await admin[0].replicaof('127.0.0.1', String(b.port)); // read-only from now on, synced or not

    // Without reconnectOnError every write would fail READONLY on A for good.
    for (let i = 0; i < 5; i++) expect(await client.set('k', `on-b-${i}`)).toBe('OK');
    expect(await client.incr('n')).toBe(1);
    expect(await admin[1].get('k')).toBe('on-b-4');
    // The BLPOP went again to B and gets what B is given.
    await admin[1].rpush('wake', 'token');
    expect(await popped).toEqual(['wake', 'token']);

    // A process whose REDIS_URL names a replica would meet READONLY for ever: it refuses to start instead.
    const p = await startSluice({ REDIS_URL: a.url }, { waitReady: false });
    expect((await p.exited).code).not.toBe(0);
    expect(p.output()).toContain(`Redis at REDIS_URL=${a.url} is a replica: point REDIS_URL at the master, or use REDIS_SENTINELS`);
  } finally {
    client.disconnect();
    blocking.disconnect();
    admin.forEach((c) => c.disconnect());
    fwd.close();
    await Promise.all([a.kill(), b.kill()]);
    removeDir(a.opts.dir);
    removeDir(b.opts.dir);
  }
});
