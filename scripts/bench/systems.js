/*
 * The two systems the engine benchmarks drive (engine.js, keys.js): Sluice
 * through its store and in-process WorkerRuntime, BullMQ 6.7 through its
 * Queue and Worker, both in the bench process, each under a key prefix or
 * queue name of its own on the same Redis. Plus the statistics they share.
 *
 * Needs `npm run build` (uses dist/; DIST=<other checkout>/dist, or the
 * `dist` option of sluice(), for another build, whose lua/ folder sits next
 * to its dist/: two builds can run side by side in one process) and Redis at
 * REDIS_URL.
 */
const { performance } = require('node:perf_hooks');
const path = require('node:path');
const DEFAULT_DIST = process.env.DIST || path.resolve(__dirname, '../../dist');
const { Queue, Worker } = require('bullmq');
const { deletePrefix } = require('../lib/cleanup');
const IORedis = require('ioredis');

/** Read at each use, so a script may point REDIS_URL at a Redis it started. */
const redisUrl = () => process.env.REDIS_URL || 'redis://127.0.0.1:6379';
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};
const pct = (xs, p) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))];
};
const fmt = (x) => Math.round(x).toLocaleString('en-US');
let seq = 0;

const builds = new Map();
/** The modules of one build. */
function build(dist = DEFAULT_DIST) {
  if (!builds.has(dist)) builds.set(dist, load(dist));
  return builds.get(dist);
}
function load(dist) {
  return {
    ...require(`${dist}/redis/connection`),
    ...require(`${dist}/redis/stores`),
    ...require(`${dist}/core/job-options`),
    ...require(`${dist}/core/handler`),
    ...require(`${dist}/workers/runtime/worker-runtime`),
    ...require(`${dist}/redis/wake/wake-waiter`),
  };
}

/** One no-op job of queue `bench` as the store's enqueue takes it. */
const normalize = (payload, dist) => build(dist).normalizeEnqueue({ type: 'noop', queue: 'bench', payload }, 1e6);

/**
 * Sluice on its own key prefix, queue `bench`.
 * @param {{concurrency: number, inflight: number, tag?: string, dist?: string}} opts
 *   concurrency: the worker's default slots; inflight: single adds in flight;
 *   tag: part of the key prefix (which bench made it); dist: the build to run.
 */
function sluice({ concurrency, inflight, tag = 'sluice', dist }) {
  const { createRedis, createRedisStores, HandlerMap, WorkerRuntime, RedisWakeWaiter } = build(dist);
  const redis = createRedis({ redisUrl: redisUrl(), redisClusterNodes: null });
  const stores = createRedisStores(redis, `bench-${tag}-${process.pid}-${seq++}`);
  const store = stores.jobs;
  /** keyOf(i): the i-th job's concurrency key, or undefined for none. */
  const job = (i, payload, keyOf) => {
    const j = normalize(payload ?? { i }, dist);
    const ck = keyOf?.(i);
    return ck === undefined ? j : { ...j, concurrencyKey: ck };
  };
  return {
    name: 'Sluice',
    redis,
    stores,
    store,
    keys: (queue) => stores.ctx.keys(queue),
    async addSingle(n) {
      let next = 0;
      const t0 = performance.now();
      await Promise.all(
        Array.from({ length: inflight }, async () => {
          while (next < n) await store.enqueue([job(next++)]);
        }),
      );
      return n / ((performance.now() - t0) / 1000);
    },
    /** Enqueues n jobs in calls of `size`; returns jobs/s. */
    async addBatch(n, size = 1000, payload, keyOf) {
      const t0 = performance.now();
      for (let i = 0; i < n; i += size) {
        const batch = [];
        for (let j = i; j < Math.min(n, i + size); j++) batch.push(job(j, payload, keyOf));
        await store.enqueue(batch);
      }
      return n / ((performance.now() - t0) / 1000);
    },
    /**
     * Starts a WorkerRuntime on queue `bench` (or `queues`); `finished` resolves with jobs/s
     * once n handlers have run (n = Infinity: never; stop `rt` yourself).
     * onStart(ctx, payload) runs in each handler.
     */
    async process(n, onStart, { concurrency: conc = concurrency, queues = ['bench'] } = {}) {
      const handlers = new HandlerMap();
      let done = 0;
      let resolveAll;
      const all = new Promise((r) => (resolveAll = r));
      handlers.register('noop', (p, ctx) => {
        if (onStart) onStart(ctx, p);
        if (++done === n) resolveAll();
        return null;
      });
      const waiter = new RedisWakeWaiter(() => createRedis({ redisUrl: redisUrl(), redisClusterNodes: null }, { blocking: true }), false, (q) => stores.ctx.keys(q).wake);
      const rt = new WorkerRuntime(stores, handlers, waiter, {
        workerId: 'bench', queues, concurrency: conc, leaseMs: 30000, heartbeatIntervalMs: 10000, shutdownGraceMs: 1000,
      });
      const t0 = performance.now();
      rt.start();
      return {
        rt,
        done: () => done,
        finished: all.then(async () => {
          await rt.stop();
          return n / ((performance.now() - t0) / 1000);
        }),
      };
    },
    clean: () => deletePrefix(redis, stores.ctx.prefix),
    close: () => redis.disconnect(),
  };
}

/** BullMQ on a queue name of its own. @param {{concurrency: number, inflight: number}} opts */
function bullmq({ concurrency, inflight }) {
  const connection = new IORedis(redisUrl(), { maxRetriesPerRequest: null });
  const name = `bench-bull-${process.pid}-${seq++}`;
  const queue = new Queue(name, { connection });
  return {
    name: 'BullMQ',
    async addSingle(n) {
      let next = 0;
      const t0 = performance.now();
      await Promise.all(
        Array.from({ length: inflight }, async () => {
          while (next < n) {
            const i = next++;
            await queue.add('noop', { i });
          }
        }),
      );
      return n / ((performance.now() - t0) / 1000);
    },
    async addBatch(n, size = 1000) {
      const t0 = performance.now();
      for (let i = 0; i < n; i += size) {
        const batch = [];
        for (let j = i; j < Math.min(n, i + size); j++) batch.push({ name: 'noop', data: { i: j } });
        await queue.addBulk(batch);
      }
      return n / ((performance.now() - t0) / 1000);
    },
    async process(n, onStart) {
      let done = 0;
      let resolveAll;
      const all = new Promise((r) => (resolveAll = r));
      const t0 = performance.now();
      const worker = new Worker(
        name,
        async (job) => {
          if (onStart) onStart(job);
          return null;
        },
        { connection: new IORedis(redisUrl(), { maxRetriesPerRequest: null }), concurrency, removeOnComplete: { count: 1000 } },
      );
      worker.on('completed', () => {
        if (++done === n) resolveAll();
      });
      return {
        worker,
        finished: all.then(async () => {
          const rate = n / ((performance.now() - t0) / 1000);
          await worker.close();
          return rate;
        }),
      };
    },
    async clean() {
      await queue.obliterate({ force: true });
    },
    async close() {
      await queue.close();
      connection.disconnect();
    },
  };
}

/**
 * Waits until Redis has finished freeing what the previous phase deleted
 * (UNLINK frees large values on a background thread, which on 2 cores takes
 * CPU from everything else for a while), so "idle" means idle for both systems.
 */
async function redisQuiet() {
  const r = new IORedis(redisUrl());
  try {
    for (let i = 0; i < 200; i++) {
      const pending = Number(/lazyfree_pending_objects:(\d+)/.exec(await r.info('memory'))?.[1] ?? 0);
      if (pending === 0) break;
      await sleep(50);
    }
    await sleep(500);
  } finally {
    r.disconnect();
  }
}

/** INFO commandstats as {cmd: {calls, usec}}. */
async function commandstats(redis) {
  const out = {};
  for (const line of (await redis.info('commandstats')).split('\n')) {
    const m = /^cmdstat_([^:]+):calls=(\d+),usec=(\d+)/.exec(line);
    if (m) out[m[1]] = { calls: Number(m[2]), usec: Number(m[3]) };
  }
  return out;
}

module.exports = { redisUrl, sluice, bullmq, normalize, redisQuiet, sleep, median, pct, fmt, commandstats };
