#!/usr/bin/env node
/*
 * Audit mirror benchmark (after `npm run build`; Redis at REDIS_URL, Postgres at PG_URL):
 *  1. throughput: N jobs enqueued and processed with no writer running, then an
 *     MirrorWriter drains the streams: events/s into PostgreSQL;
 *  2. lag: a steady 5,000 jobs/s for 20 s with a worker and the writer on (in a
 *     worker thread, then on the worker's event loop): p50/p99 of the age of
 *     the oldest unmirrored event, sampled every 50 ms;
 *  3. processing with full audit vs BullMQ (no history at all), same Redis, alternating;
 *     the writer on the worker's event loop (AUDIT_THREAD=false), in a worker
 *     thread of the worker's process (ROLE=all's default) and in a process of
 *     its own (scripts/bench/audit-writer-child.js, as docker-compose runs ROLE=audit).
 *   node scripts/bench/audit.js [--n 50000] [--rounds 3] [--write docs/benchmarks.md] [--only drain|processing|lag]
 * (--only runs one part, its own figures printed per round; nothing is written.)
 */
const { performance } = require('node:perf_hooks');
const os = require('node:os');
const fs = require('node:fs');
const path = require('node:path');
const dist = process.env.DIST || path.resolve(__dirname, '../../dist'); // DIST: another build's dist, to compare
const { createRedis } = require(`${dist}/redis/connection`);
const { createRedisStores } = require(`${dist}/redis/stores`);
const { normalizeEnqueue } = require(`${dist}/core/job-options`);
const { HandlerMap } = require(`${dist}/core/handler`);
const { WorkerRuntime } = require(`${dist}/workers/runtime/worker-runtime`);
const { RedisWakeWaiter } = require(`${dist}/redis/wake/wake-waiter`);
const { MirrorWriter } = require(`${dist}/mirror/mirror-writer`);
const { MirrorWriterThread } = require(`${dist}/mirror/writer-thread`);
const { openPostgres } = require(`${dist}/postgres/data-source`);
const { readBacklog } = require(`${dist}/mirror/backlog`);
const { Queue, Worker } = require('bullmq');
const IORedis = require('ioredis');
const { deletePrefix, dropDatabase } = require('../lib/cleanup');

const args = process.argv.slice(2);
const opt = (name, def) => (args.includes(`--${name}`) ? args[args.indexOf(`--${name}`) + 1] : def);
const N = Number(opt('n', 50000));
const ROUNDS = Number(opt('rounds', 3));
const WRITE = opt('write', null);
const REDIS_URL = process.env.REDIS_URL || 'redis://127.0.0.1:6379';
const PG_URL = process.env.PG_URL || 'postgres://postgres@127.0.0.1:5432/postgres';
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor((xs.length - 1) / 2)];
const pct = (xs, p) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor((p / 100) * xs.length))];
const fmt = (x) => Math.round(x).toLocaleString('en-US');
let seq = 0;

async function freshDb() {
  const u = new URL(PG_URL);
  u.pathname = `/sluice_bench_${process.pid}_${seq++}`;
  const { dataSource } = await openPostgres(u.toString(), 10);
  return {
    db: dataSource,
    url: u.toString(),
    async drop() {
      await dataSource.destroy();
      await dropDatabase(u.toString());
    },
  };
}

function sluice() {
  const redis = createRedis({ redisUrl: REDIS_URL, redisClusterNodes: null });
  const stores = createRedisStores(redis, `bench-audit-${process.pid}-${seq++}`);
  const store = stores.jobs;
  const job = (i) => normalizeEnqueue({ type: 'noop', queue: 'bench', payload: { i } }, 1e6);
  return {
    redis,
    stores,
    store,
    prefix: stores.ctx.prefix,
    async fill(n) {
      for (let i = 0; i < n; i += 1000) await store.enqueue(Array.from({ length: Math.min(1000, n - i) }, (_, j) => job(i + j)));
    },
    worker(onJob) {
      const handlers = new HandlerMap();
      handlers.register('noop', () => (onJob && onJob(), null));
      const rt = new WorkerRuntime(stores, handlers, new RedisWakeWaiter(() => createRedis({ redisUrl: REDIS_URL, redisClusterNodes: null }, { blocking: true }), false, (q) => stores.ctx.keys(q).wake), {
        workerId: 'bench', queues: ['bench'], concurrency: 50, leaseMs: 30000, heartbeatIntervalMs: 10000, shutdownGraceMs: 1000,
      });
      rt.start();
      return rt;
    },
    writer(db) {
      const w = new MirrorWriter(stores, db, { writerId: `w${seq++}`, idleMs: 2 });
      w.start();
      return w;
    },
    job,
    async clean() {
      await deletePrefix(redis, stores.ctx.prefix);
      redis.disconnect();
    },
  };
}

async function waitDrained(s) {
  for (;;) {
    const b = await readBacklog(s.stores);
    if (b.pending === 0) return;
    await sleep(5);
  }
}

async function throughput() {
  const s = sluice();
  const { db, drop } = await freshDb();
  await s.fill(N);
  let done = 0;
  const rt = s.worker(() => done++);
  while (done < N) await sleep(10);
  await rt.stop();
  const events = (await readBacklog(s.stores)).pending;
  const t0 = performance.now();
  const w = s.writer(db);
  await waitDrained(s);
  const rate = events / ((performance.now() - t0) / 1000);
  await w.stop();
  await s.clean();
  await drop();
  return { events, rate };
}

/** Starts the mirror writer in a worker thread (ROLE=all's default); same stop() as an MirrorWriter. */
function threadWriter(s, url) {
  const quiet = { debug() {}, info() {}, warn() {}, error: (o, m) => console.error(m, o) };
  const config = { redisUrl: REDIS_URL, redisClusterNodes: null, redisPrefix: s.prefix, databaseUrl: url, logLevel: 'warn', maxRetries: 3, idempotencyTtlMs: 86400000, keepCompletedCount: -1, keepCompletedMs: -1, auditThreadNice: Number(process.env.AUDIT_THREAD_NICE ?? 10) };
  const th = new MirrorWriterThread(path.join(dist, 'mirror/writer-thread.js'), config, `thread-${seq++}`, quiet);
  th.start();
  return th;
}

async function lag(inThread, rate = 5000, seconds = 20) {
  const s = sluice();
  const { db, drop, url } = await freshDb();
  const w = inThread ? threadWriter(s, url) : s.writer(db);
  // Steady-state lag: the load starts once the thread is up (its boot, ~0.3 s,
  // would otherwise be the p99), as the in-process writer is up at once.
  if (inThread) await w.whenReady();
  const rt = s.worker();
  const samples = [];
  let sampling = true;
  const sampler = (async () => {
    while (sampling) {
      samples.push((await readBacklog(s.stores)).lagMs);
      await sleep(50);
    }
  })();
  const t0 = performance.now();
  let sent = 0;
  while (performance.now() - t0 < seconds * 1000) {
    const due = Math.floor(((performance.now() - t0) / 1000) * rate);
    const batch = [];
    while (sent < due) batch.push(s.job(sent++));
    await Promise.all(batch.map((j) => s.store.enqueue([j])));
    await sleep(5);
  }
  sampling = false;
  await sampler;
  await rt.stop();
  await waitDrained(s);
  await w.stop();
  await s.clean();
  await drop();
  return { p50: pct(samples, 50), p99: pct(samples, 99), jobs: sent };
}

/** Runs a worker over the N prefilled jobs; jobs/s until the last one is done (the mirror may still be behind). */
async function processAll(s) {
  let done = 0;
  const t0 = performance.now();
  const rt = s.worker(() => done++);
  while (done < N) await sleep(2);
  await rt.stop();
  return N / ((performance.now() - t0) / 1000);
}

/**
 * N prefilled jobs processed with a writer on: `start(s, db, url)` starts it
 * at the moment the worker starts and returns its stop(). jobs/s until the
 * last job is done; then the mirror is drained before the next measurement.
 */
async function processingWith(start) {
  const s = sluice();
  const { db, drop, url } = await freshDb();
  await s.fill(N);
  const stop = await start(s, db, url);
  const r = await processAll(s);
  const t = performance.now();
  await waitDrained(s);
  caughtUp.push(performance.now() - t);
  await stop();
  await s.clean();
  await drop();
  return r;
}

/** For each processingWith run, ms from the last job done to the mirror drained (the history trails the jobs by this). */
const caughtUp = [];

/** The writer on the worker's event loop (AUDIT_THREAD=false). */
const processingWithAudit = () =>
  processingWith((s, db) => {
    const w = s.writer(db);
    return () => w.stop();
  });

/**
 * The writer in a worker thread of the worker's process, as `ROLE=all` runs
 * it by default; the worker starts once the thread is up (its ~0.3 s boot
 * would otherwise be a head start for processing).
 */
const processingWithAuditThread = () =>
  processingWith(async (s, db, url) => {
    const th = threadWriter(s, url);
    await th.whenReady();
    return () => th.stop();
  });

/**
 * The writer in a process of its own (scripts/bench/audit-writer-child.js),
 * as docker-compose deploys the `audit` role; told to go once it is ready.
 */
const processingWithAuditChild = () =>
  processingWith(async (s, db, url) => {
    const { fork } = require('node:child_process');
    const child = fork(path.join(__dirname, 'audit-writer-child.js'), [s.prefix, url]);
    await new Promise((res, rej) => {
      child.once('message', res);
      child.once('exit', (code) => rej(new Error(`audit writer child exited with ${code}`)));
    });
    child.send('go');
    return async () => {
      child.send('stop');
      await new Promise((res) => child.once('exit', res));
    };
  });

async function processingBull() {
  const connection = new IORedis(REDIS_URL, { maxRetriesPerRequest: null });
  const name = `bench-audit-bull-${process.pid}-${seq++}`;
  const q = new Queue(name, { connection });
  for (let i = 0; i < N; i += 1000) await q.addBulk(Array.from({ length: Math.min(1000, N - i) }, (_, j) => ({ name: 'noop', data: { i: i + j } })));
  let done = 0;
  const t0 = performance.now();
  const worker = new Worker(name, async () => null, { connection: new IORedis(REDIS_URL, { maxRetriesPerRequest: null }), concurrency: 50, removeOnComplete: { count: 1000 } });
  worker.on('completed', () => done++);
  while (done < N) await sleep(2);
  const r = N / ((performance.now() - t0) / 1000);
  await worker.close();
  await q.obliterate({ force: true });
  await q.close();
  connection.disconnect();
  return r;
}

/** `--only <part>`: one part alone, `ROUNDS` times (lag: thread then event loop per round), figures per round and medians. */
async function only(part) {
  const rows = [];
  for (let r = 0; r < ROUNDS; r++) {
    if (part === 'drain') rows.push(await throughput());
    else if (part === 'lag') rows.push({ thread: await lag(true), loop: await lag(false) });
    else if (part === 'processing') {
      const order = [processingWithAuditThread, processingBull];
      if (r % 2) order.reverse();
      const got = new Map();
      for (const f of order) got.set(f, await f());
      rows.push({
        thread: Math.round(got.get(processingWithAuditThread)),
        bull: Math.round(got.get(processingBull)),
        ratio: Number((got.get(processingWithAuditThread) / got.get(processingBull)).toFixed(2)),
        mirroredAfterMs: Math.round(caughtUp[caughtUp.length - 1]),
      });
    } else throw new Error(`--only: drain, processing or lag, not ${part}`);
    console.log(`round ${r + 1}: ${JSON.stringify(rows[r])}`);
  }
  if (part === 'drain') console.log(`drain median ${fmt(median(rows.map((x) => x.rate)))} events/s`);
  if (part === 'lag') console.log(`lag p99 medians: thread ${median(rows.map((x) => x.thread.p99))} ms, event loop ${median(rows.map((x) => x.loop.p99))} ms`);
  if (part === 'processing') console.log(`thread / BullMQ, median of per-round ratios ${median(rows.map((x) => x.ratio)).toFixed(2)}x`);
}

async function main() {
  console.log(`machine: ${os.cpus().length}x ${os.cpus()[0].model}, node ${process.version}; N=${N}, rounds=${ROUNDS}`);
  if (opt('only', null)) {
    await only(opt('only', null));
    process.exit(0);
  }
  const tp = [], withAudit = [], withThread = [], withChild = [], bull = [];
  for (let r = 0; r < ROUNDS; r++) {
    const t = await throughput();
    tp.push(t.rate);
    const order = [processingWithAudit, processingWithAuditThread, processingWithAuditChild, processingBull];
    if (r % 2) order.reverse();
    const into = new Map([[processingWithAudit, withAudit], [processingWithAuditThread, withThread], [processingWithAuditChild, withChild], [processingBull, bull]]);
    for (const f of order) into.get(f).push(await f());
    console.log(
      `round ${r + 1}: audit ${fmt(t.rate)} events/s (${fmt(t.events)} events); processing with audit ${fmt(withAudit[r])}/s (writer in a worker thread ${fmt(withThread[r])}/s, in its own process ${fmt(withChild[r])}/s); BullMQ ${fmt(bull[r])}/s`,
    );
  }
  const l = await lag(true);
  console.log(`lag at 5,000 jobs/s for 20 s, writer in a worker thread (${fmt(l.jobs)} jobs): p50 ${l.p50} ms, p99 ${l.p99} ms`);
  const lm = await lag(false);
  console.log(`lag at 5,000 jobs/s for 20 s, writer on the worker's event loop (${fmt(lm.jobs)} jobs): p50 ${lm.p50} ms, p99 ${lm.p99} ms`);
  const lines = [
    `### Audit run of ${new Date().toISOString().slice(0, 10)}`,
    '',
    `Machine: ${os.cpus().length}× ${os.cpus()[0].model}, Node ${process.version}, Redis and PostgreSQL on the same host. Command: \`node scripts/bench/audit.js --n ${N} --rounds ${ROUNDS}\`. Medians of ${ROUNDS} rounds.`,
    '',
    `| measure | result |`,
    `|---|---:|`,
    `| audit writer throughput into PostgreSQL | ${fmt(median(tp))} events/s |`,
    `| audit lag at a steady 5,000 jobs/s, p50 / p99, writer in a worker thread / on the worker's event loop | ${l.p50} / ${l.p99} ms; ${lm.p50} / ${lm.p99} ms |`,
    `| processing, no-op, concurrency 50, with the audit writer on, on the worker's event loop (AUDIT_THREAD=false) | ${fmt(median(withAudit))} jobs/s |`,
    `| the same, the writer in a worker thread of the worker's process (\`ROLE=all\`, the default) | ${fmt(median(withThread))} jobs/s |`,
    `| the same, the writer in its own process (as docker-compose deploys \`ROLE=audit\`) | ${fmt(median(withChild))} jobs/s |`,
    `| BullMQ 6.7 processing, same setup (no history kept) | ${fmt(median(bull))} jobs/s |`,
    `| ratio to BullMQ, writer on the worker's event loop / in a thread / in its own process | ${[withAudit, withThread, withChild].map((x) => (median(x) / median(bull)).toFixed(2) + 'x').join(' / ')} |`,
    '',
  ];
  console.log(lines.slice(4).join('\n'));
  if (WRITE) fs.appendFileSync(WRITE, lines.join('\n') + '\n');
  process.exit(0);
}
main().catch((e) => {
  console.error(e);
  process.exit(1);
});
