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
 * Redis dies under a busy worker (SIGKILL: connections drop, no shutdown) and
 * comes back ~2 s later from its AOF (appendfsync always, so every write a
 * client saw acknowledged survives). The worker pauses claiming, says so,
 * resumes when Redis is back, never crashes, and every job completes; a job
 * that ran twice was put back by the reaper (`stalled`) in between.
 */

jest.setTimeout(90_000);

const JOBS = 500;
const QUEUE = 'reconnect';
const prefix = `t-rc-${randomBytes(3).toString('hex')}`;
let dir: string;
let server: RedisServer;
let redis: Redis;
let store: RedisStores;
let worker: SluiceProcess | undefined;

beforeAll(async () => {
  dir = makeTmpDir('reconnect');
  server = await startRedisServer({ dir, appendonly: true, appendfsync: 'always' });
  redis = createRedis({ redisUrl: server.url, redisClusterNodes: null }) as Redis;
  redis.on('error', () => undefined); // the outage is expected; this client reconnects by itself
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

/** Log lines (pino JSON) of the worker process whose msg matches `re`, with their position in the output. */
function logLines(out: string, re: RegExp): { at: number; msg: string }[] {
  const found: { at: number; msg: string }[] = [];
  let at = 0;
  for (const line of out.split('\n')) {
    if (line.startsWith('{')) {
      try {
        const o = JSON.parse(line) as { msg?: string };
        if (o.msg && re.test(o.msg)) found.push({ at, msg: o.msg });
      } catch {
        /* not a log line */
      }
    }
    at += line.length + 1;
  }
  return found;
}

test(`worker survives Redis being killed for ~2 s under load; ${JOBS} jobs complete, none re-run without a stall`, async () => {
  worker = await startSluice({
    REDIS_URL: server.url,
    REDIS_PREFIX: prefix,
    QUEUES: QUEUE,
    ROLE: 'worker,scheduler',
    WORKER_CONCURRENCY: '5',
    LOCK_TTL_MS: '2000',
    HEARTBEAT_INTERVAL_MS: '500',
    REAPER_INTERVAL_MS: '500',
    SHUTDOWN_GRACE_MS: '1000',
  });

  const ids = (
    await store.jobs.enqueue(
      Array.from({ length: JOBS }, (_, i) =>
        normalizeEnqueue({ queue: QUEUE, type: 'diag.sleep', payload: { ms: 20, n: i } }, 1e6),
      ),
    )
  ).map((r) => r.id);

  const k = store.ctx.keys(QUEUE);
  await waitUntil(
    '100 jobs claimed',
    async () => (await redis.zcard(k.waiting)) <= JOBS - 100,
    30_000,
    5,
  );
  const waitingAtKill = await redis.zcard(k.waiting);
  expect(waitingAtKill).toBeGreaterThan(200); // really mid-run
  const outAtKill = worker.output().length;

  await server.kill(); // SIGKILL: no SHUTDOWN, every connection drops
  const killedAt = Date.now();
  // While Redis is away, the worker notices and stops claiming.
  await worker.waitFor(/claiming paused|pausing claims/, 5000);
  await sleepMs(Math.max(0, 2000 - (Date.now() - killedAt)));
  expect(worker.proc.exitCode).toBeNull();
  await server.start();

  await worker.waitFor(/claiming again|claiming resumed/, 15_000);
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
  // A lost lease is reaped (REAPER_INTERVAL_MS 500) and re-run within ~2.5 s: give a duplicate the time to show up.
  await sleepMs(2500);

  const trails = await auditTrails(redis, k.events);
  const { problems, reruns, stalled, rerun } = checkRunsOnce(ids, trails);
  expect(problems.slice(0, 20)).toEqual([]);
  for (const id of ids) {
    const job = await store.jobs.getJob(QUEUE, id);
    expect(job?.status).toBe('completed');
    expect(job?.executionSeq).toBe(trails.get(id)!.count.claimed);
  }
  expect(await store.queues.liveCounts(QUEUE)).toEqual({ waiting: 0, delayed: 0, active: 0, failed: 0 });

  // Paused after the kill, resumed after it, in that order.
  const after = worker.output().slice(outAtKill);
  const paused = logLines(after, /claiming paused|pausing claims/);
  const resumed = logLines(after, /claiming again|claiming resumed/);
  expect(paused.length).toBeGreaterThanOrEqual(1);
  expect(resumed.length).toBeGreaterThanOrEqual(1);
  expect(paused[0].at).toBeLessThan(resumed[resumed.length - 1].at);
  process.stdout.write(
    `reconnect: ${JOBS} jobs, waiting at kill ${waitingAtKill}, re-runs ${reruns}, stalled events ${stalled}${rerun.length ? ` (${rerun.join('; ')})` : ''}; worker said: ${[...paused, ...resumed].map((l) => l.msg).join(' | ')}\n`,
  );

  // Still alive, and still working: a new job runs at once.
  expect(worker.proc.exitCode).toBeNull();
  expect(worker.proc.signalCode).toBeNull();
  const [late] = await store.jobs.enqueue([
    normalizeEnqueue({ queue: QUEUE, type: 'diag.sleep', payload: { ms: 1 } }, 1e6),
  ]);
  await waitUntil(
    'a job enqueued after the outage completed',
    async () => (await store.jobs.getJob(QUEUE, late.id))?.status === 'completed',
    10_000,
    50,
  );
});
