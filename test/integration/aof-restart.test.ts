import { randomBytes } from 'node:crypto';
import Redis from 'ioredis';
import { normalizeEnqueue } from '../../src/core/job-options';
import { createRedis } from '../../src/redis/connection';
import { createRedisStores, type RedisStores } from '../../src/redis/stores';
import { RedisScripts } from '../../src/redis/scripts';
import { killAll, SluiceProcess, startSluice } from '../support/process';
import {
  auditTrails,
  checkRunsOnce,
  makeTmpDir,
  RedisServer,
  removeDir,
  sleepMs,
  startRedisServer,
  stopAllRedisServers,
  waitUntil,
} from '../support/redis-server';

/**
 * Redis restarts in the middle of a run (graceful SHUTDOWN, AOF with
 * appendfsync always, same dir and port): nothing is lost, the worker
 * reconnects and goes on, and a job runs twice only if the reaper put it
 * back (a `stalled` event) in between.
 */

jest.setTimeout(90_000);

const JOBS = 2000;
const QUEUE = 'aof';
const prefix = `t-aof-${randomBytes(3).toString('hex')}`;
let dir: string;
let server: RedisServer;
let redis: Redis;
let store: RedisStores;
let worker: SluiceProcess | undefined;

beforeAll(async () => {
  dir = makeTmpDir('aof-restart');
  server = await startRedisServer({ dir, appendonly: true, appendfsync: 'always' });
  redis = createRedis({ redisUrl: server.url, redisClusterNodes: null }) as Redis;
  const scripts = new RedisScripts(redis);
  await scripts.verify();
  store = createRedisStores(redis, prefix, undefined, scripts);
});

afterAll(async () => {
  await killAll([worker]);
  redis?.disconnect();
  await stopAllRedisServers();
  removeDir(dir);
});

test(`${JOBS} diag.sleep jobs survive a Redis restart mid-run, each completed once`, async () => {
  worker = await startSluice({
    REDIS_URL: server.url,
    REDIS_PREFIX: prefix,
    QUEUES: QUEUE,
    ROLE: 'worker,scheduler',
    WORKER_CONCURRENCY: '20',
    LOCK_TTL_MS: '2000',
    HEARTBEAT_INTERVAL_MS: '500',
    REAPER_INTERVAL_MS: '500',
    SHUTDOWN_GRACE_MS: '1000',
  });

  const ids: string[] = [];
  for (let b = 0; b < JOBS; b += 500) {
    const batch = Array.from({ length: 500 }, (_, i) =>
      normalizeEnqueue({ queue: QUEUE, type: 'diag.sleep', payload: { ms: 5, n: b + i } }, 1e6),
    );
    ids.push(...(await store.jobs.enqueue(batch)).map((r) => r.id));
  }
  expect(new Set(ids).size).toBe(JOBS);

  // Restart once a good part, but far from all, of the jobs has been claimed.
  const k = store.ctx.keys(QUEUE);
  await waitUntil(
    'a third of the jobs claimed',
    async () => (await redis.zcard(k.waiting)) <= JOBS - 600,
    30_000,
    5,
  );
  const before = {
    waiting: await redis.zcard(k.waiting),
    active: await redis.zcard(k.active),
    runId: /run_id:(\w+)/.exec(await redis.info('server'))![1],
  };
  expect(before.waiting).toBeGreaterThan(200); // really mid-run

  await server.stop('SIGTERM'); // SHUTDOWN: the AOF is flushed and fsynced, connections close
  await sleepMs(300);
  await server.start();
  const after = /run_id:(\w+)/.exec(await redis.info('server'))![1];
  expect(after).not.toBe(before.runId); // really a new server process, loaded from the AOF
  expect(server.output()).toMatch(/DB loaded from (append only file|incr file|base file)/);

  await waitUntil(
    'every job completed',
    async () => {
      const trails = await auditTrails(redis, k.events);
      return ids.every((id) => trails.get(id)?.count.completed);
    },
    30_000,
    250,
  ).catch((e: Error) => {
    throw new Error(`${e.message}\nworker output (tail):\n${worker!.output().slice(-3000)}`);
  });
  // A lost lease would be reaped (REAPER_INTERVAL_MS 500) and re-run within ~2.5 s: give it the time to show up.
  await sleepMs(2500);

  const trails = await auditTrails(redis, k.events);
  const { problems, reruns, stalled, rerun } = checkRunsOnce(ids, trails);
  expect(problems.slice(0, 20)).toEqual([]);
  process.stdout.write(
    `aof-restart: ${JOBS} jobs, waiting/active at restart ${before.waiting}/${before.active}, re-runs ${reruns}, stalled events ${stalled}${rerun.length ? ` (${rerun.join('; ')})` : ''}\n`,
  );

  // The job hashes agree with the audit trail.
  for (const id of ids) {
    const job = await store.jobs.getJob(QUEUE, id);
    expect(job?.status).toBe('completed');
    expect(job?.executionSeq).toBe(trails.get(id)!.count.claimed);
  }
  expect(await store.queues.liveCounts(QUEUE)).toEqual({ waiting: 0, delayed: 0, active: 0, failed: 0 });
  expect(worker.proc.exitCode).toBeNull();
  expect(worker.proc.signalCode).toBeNull();
});
