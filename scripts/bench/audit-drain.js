#!/usr/bin/env node
/*
 * One drain of the mirror writer with its CPU split, for A/B runs of two builds:
 * N jobs enqueued and processed with no writer, then one MirrorWriter (on this
 * process's main thread) drains the streams. Prints one JSON line: events,
 * events/s, and CPU per event in µs of this process (Node), of every
 * `postgres` process (/proc, Linux) and of Redis (INFO cpu).
 *
 *   npm run build && node scripts/bench/audit-drain.js
 *   DIST=/other/checkout/dist node scripts/bench/audit-drain.js   # the same drain on another build
 * Env: N (jobs, default 20000; 3 events each), REDIS_URL, PG_URL (server for a throwaway database);
 * PAYLOAD=rich (a ~300-byte order payload instead of {i}); PAYLOAD_INDEX=bench|other (a payload-search
 * index, src/queues/payload-search.ts, on the drained queue or on another one); LIVE=1 (a console is
 * listening: the writer publishes its job-change notices, src/mirror/job-changes.ts).
 */
const path = require('node:path');
const { performance } = require('node:perf_hooks');
const dist = process.env.DIST || path.resolve(__dirname, '../../dist');
const { createRedis } = require(`${dist}/redis/connection`);
const { createRedisStores } = require(`${dist}/redis/stores`);
const { normalizeEnqueue } = require(`${dist}/core/job-options`);
const { HandlerMap } = require(`${dist}/core/handler`);
const { WorkerRuntime } = require(`${dist}/workers/runtime/worker-runtime`);
const { RedisWakeWaiter } = require(`${dist}/redis/wake/wake-waiter`);
const { MirrorWriter } = require(`${dist}/mirror/mirror-writer`);
const { openPostgres } = require(`${dist}/postgres/data-source`);
const { readBacklog } = require(`${dist}/mirror/backlog`);
const { deletePrefix, dropDatabase } = require('../lib/cleanup');
const { postgresCpu, postgresDelta, redisCpu } = require('./proc-cpu');

const N = Number(process.env.N || 20000);
const REDIS_URL = process.env.REDIS_URL || 'redis://127.0.0.1:6379';
const PG_URL = process.env.PG_URL || 'postgres://postgres@127.0.0.1:5432/postgres';
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
async function main() {
  const redis = createRedis({ redisUrl: REDIS_URL, redisClusterNodes: null });
  const stores = createRedisStores(redis, `bench-drain-${process.pid}`);
  const store = stores.jobs;
  const url = new URL(PG_URL);
  url.pathname = `/sluice_bench_drain_${process.pid}`;
  const { dataSource: db } = await openPostgres(url.toString(), 10);
  if (process.env.PAYLOAD_INDEX) await db.query(require(`${dist}/queues/payload-search`).payloadIndexSql(process.env.PAYLOAD_INDEX));
  if (process.env.LIVE === '1') await stores.liveEvents.markListening(3_600_000);
  const payloadOf = (i) =>
    process.env.PAYLOAD === 'rich'
      ? { i, orderId: 100000 + i, customer: { id: `c-${i % 5000}`, email: `user${i % 5000}@example.com`, tier: ['gold', 'silver', 'bronze'][i % 3] },
          items: [{ sku: `sku-${i % 97}`, qty: 1 + (i % 4), price: 19.99 }, { sku: `sku-${i % 31}`, qty: 1, price: 5.5 }], currency: 'EUR', note: 'deliver after 5 pm' }
      : { i };
  for (let i = 0; i < N; i += 1000) {
    await store.enqueue(Array.from({ length: Math.min(1000, N - i) }, (_, j) => normalizeEnqueue({ type: 'noop', queue: 'bench', payload: payloadOf(i + j) }, 1e6)));
  }
  let done = 0;
  const handlers = new HandlerMap();
  handlers.register('noop', () => (done++, null));
  const rt = new WorkerRuntime(stores, handlers, new RedisWakeWaiter(() => createRedis({ redisUrl: REDIS_URL, redisClusterNodes: null }, { blocking: true }), false, (q) => stores.ctx.keys(q).wake), {
    workerId: 'bench', queues: ['bench'], concurrency: 50, leaseMs: 30000, heartbeatIntervalMs: 10000, shutdownGraceMs: 1000,
  });
  rt.start();
  while (done < N) await sleep(10);
  await rt.stop();
  const events = (await readBacklog(stores)).pending;
  const c0 = process.cpuUsage();
  const r0 = await redisCpu(redis);
  const p0 = postgresCpu();
  const t0 = performance.now();
  const w = new MirrorWriter(stores, db, { writerId: 'bench-drain', idleMs: 2 });
  w.start();
  while ((await readBacklog(stores)).pending > 0) await sleep(5);
  const secs = (performance.now() - t0) / 1000;
  const c1 = process.cpuUsage(c0);
  const perEvent = (s) => Number(((s / events) * 1e6).toFixed(1));
  console.log(
    JSON.stringify({
      events,
      rate: Math.round(events / secs),
      nodeUs: perEvent((c1.user + c1.system) / 1e6),
      pgUs: perEvent(postgresDelta(p0, postgresCpu()).all),
      redisUs: perEvent((await redisCpu(redis)) - r0),
    }),
  );
  await w.stop();
  await deletePrefix(redis, stores.ctx.prefix);
  await db.destroy();
  await dropDatabase(url.toString());
  redis.disconnect();
}

main().then(
  () => process.exit(0),
  (e) => {
    console.error(e);
    process.exit(1);
  },
);
