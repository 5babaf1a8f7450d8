#!/usr/bin/env node
/*
 * Pipeline benchmark (issues 22 and 35): the whole write path, HTTP → Redis →
 * worker → mirror writer → PostgreSQL, of a real Sluice process beside what a
 * user would pick instead, in one run: pg-boss 12 (its job table is its
 * history), BullMQ 6.7 with a history in PostgreSQL bolted on, and bare BullMQ
 * 6.7 (no history) — the peers as scripts/bench/peers.js and systems.js write
 * them. Systems alternate (each round's order rotated by one), a warm-up round
 * of each first, several rounds for each N; medians, ranges and ratios; and a
 * CPU split per job by process for every system.
 *
 *   npm run build && npm run bench:pipeline          # N = 20,000 and 100,000, 3 rounds
 *   node scripts/bench/pipeline.js --n 5000 --rounds 1 --http-duration 3      # quick
 *   node scripts/bench/pipeline.js --peers bull     # Sluice beside bare BullMQ only (issue 22's run)
 *   node scripts/bench/pipeline.js --audit-process    # the mirror writer in a process of its own
 *
 * Rows (rows 1–2 for every round of every N, then row 3's rounds, then row 4's):
 *  1. enqueue: N no-op jobs (`diag.echo`) with POST /jobs/batch (with
 *     `Prefer: return=minimal` unless --full-answer), --batch per request,
 *     into a paused queue, timed until every job's `enqueued` is mirrored (its
 *     `jobs` row exists in PostgreSQL: the queue's job_counts up by N) — vs
 *     pg-boss `insert()` of --batch jobs (its rows are its history), BullMQ
 *     `addBulk` of --batch plus the batch's job rows inserted, bare `addBulk`.
 *  2. processing until history complete: resume that queue; timed until
 *     GET /queues/:name says counts.completed is up by N (a PostgreSQL count) and the
 *     last job's GET /jobs/:id/events has its `completed` — vs pg-boss `work()`
 *     until its table says every job completed, BullMQ's Worker until every
 *     `completed` event is written to its history table, and a bare Worker
 *     (concurrency --concurrency, removeOnComplete) until its N `completed` events.
 *  3. single POST /jobs (into a paused queue of its own) vs GET /healthz, the
 *     server's no-op endpoint, on the same server: autocannon in a child
 *     process, --connections, --http-duration s each (0 skips the row).
 *     scripts/bench/http.js measures the same on a ROLE=api server.
 *  4. idle latency, enqueue → handler start: one job at a time into an idle
 *     queue, --samples of them; Sluice: Date.now() before POST /jobs to the
 *     job's startedAt (set by the claim, Redis clock); BullMQ: Date.now() before
 *     Queue.add to Date.now() in the handler; pg-boss (--pgboss-samples, 100):
 *     Date.now() before send() to the handler, woken by LISTEN/NOTIFY. All in
 *     whole milliseconds (each system's own clocks, as issue 35 decided).
 *     Printed beside it: the POST /jobs round trip alone and a GET /healthz
 *     one (µs precision), to tell HTTP from the wake-up.
 *     (scripts/bench/engine.js measures it in-process, without HTTP, in µs.)
 *  5. CPU per job (µs) in rows 1 and 2: the Sluice process(es) from
 *     /proc/<pid>/stat, Redis from INFO cpu, PostgreSQL as every `postgres`
 *     process (and, apart, the backends of this run's database), and this
 *     load client (process.cpuUsage: HTTP client and polling for Sluice; the
 *     producer and the Worker for BullMQ). The `pg` column is server-wide:
 *     anyone else's queries land in it (`pgOurs` does not); Redis is this
 *     run's own unless --shared-redis. Per round the Sluice figures are
 *     printed too, and at the end how PostgreSQL reached the history tables
 *     (pg_stat_user_tables: sequential vs index scans).
 *
 * The server: `node dist/main.js`, ROLE=all, defaults otherwise (the writer in
 * a thread of its own), DIAGNOSTIC_HANDLERS, LOG_LEVEL=warn, a REDIS_PREFIX and
 * a database of its own; WORKER_CONCURRENCY is BullMQ's Worker concurrency
 * (--concurrency, 50) so both run as many jobs at once, as issue 22's own
 * table was measured (--worker-concurrency default keeps the server's 10).
 * --main <file>: another build's dist/main.js (A/B runs).
 * --audit-process: ROLE=api,worker,scheduler and a second process ROLE=audit
 * (as docker-compose deploys it), each measured apart.
 *
 * Options: --n 20000,100000 (one or more) --rounds 3 --peers pgboss,bullhist,bull
 * --full-answer --pgboss-samples 100 --batch 1000 --concurrency 50 (BullMQ's
 * worker, and Sluice's) --worker-concurrency (Sluice's, a number or `default`)
 * --http-duration 5 --connections 50 --samples 300 --timeout 180 (s, per
 * phase) --audit-process --shared-redis --queue-per-round (rows 1–2 in a
 * queue of their own each round; default: one queue, `pipe`, counts relative).
 * Redis: a redis-server of its own on a free port (no persistence, like the
 * shared one), used by both systems, so that INFO cpu counts this run only and
 * nobody else's slow script stalls it; --shared-redis uses REDIS_URL instead.
 * Needs redis-server on PATH (or Redis at REDIS_URL with --shared-redis),
 * PostgreSQL at DATABASE_URL's server (default
 * postgres://postgres@127.0.0.1:5432/postgres; a database is created and
 * dropped), Linux /proc for the CPU split. Everything it made (server
 * processes, keys under its prefix, BullMQ queues, the database) is removed
 * at the end, also after a failure or Ctrl-C.
 */
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { performance } = require('node:perf_hooks');
const { Client } = require('pg');
const IORedis = require('ioredis');
const systems = require('./systems');
const { median, fmt, sleep, redisQuiet, pct } = systems;
const { processCpu, postgresCpu, postgresDelta, redisCpu, redisCommands, commandsPerJob } = require('./proc-cpu');
const { run: autocannon } = require('./autocannon-run');
const { freePort, startServer, waitReady, cleanup } = require('../lib/server');
const { client } = require('../lib/http');
const { RedisNode } = require('../lib/private-redis');
const peers = require('./peers');

const args = process.argv.slice(2);
const opt = (name, def) => (args.includes(`--${name}`) ? args[args.indexOf(`--${name}`) + 1] : def);
/** --n: one or more job counts, comma-separated (issue 35: both 20,000 and 100,000). */
const NS = String(opt('n', '20000,100000')).split(',').map(Number);
/** --peers: which peers run beside Sluice (pgboss, bullhist, bull). */
const PEERS = String(opt('peers', 'pgboss,bullhist,bull')).split(',').filter(Boolean);
/** Sluice's batches ask `Prefer: return=minimal` (API.md v1.3) unless --full-answer. */
const MINIMAL = !args.includes('--full-answer');
/** Idle-latency samples for pg-boss (each waits for a NOTIFY round trip or a poll). */
const PGBOSS_SAMPLES = Number(opt('pgboss-samples', 100));
const ROUNDS = Number(opt('rounds', 3));
const BATCH = Number(opt('batch', 1000));
const CONC = Number(opt('concurrency', 50));
/** Sluice's WORKER_CONCURRENCY: BullMQ's unless given; `default` leaves the server's own (null). */
const WORKER_CONC = ((w) => (w === 'default' ? null : w))(opt('worker-concurrency', String(CONC)));
const HTTP_DURATION = Number(opt('http-duration', 5));
const CONNECTIONS = Number(opt('connections', 50));
const SAMPLES = Number(opt('samples', 300));
const TIMEOUT_MS = Number(opt('timeout', 180)) * 1000;
const SPLIT_AUDIT = args.includes('--audit-process');
const SHARED_REDIS = args.includes('--shared-redis');
/** Rows 1–2 use one queue throughout (counts taken relative); --queue-per-round: a new queue each round (and for the warm-up). */
const queueOf = (round) => (args.includes('--queue-per-round') ? `pipe-r${round}` : 'pipe');
const PG_BASE = process.env.DATABASE_URL || 'postgres://postgres@127.0.0.1:5432/postgres';
/** `--main <file>`: another build's entry file (A/B runs); default dist/main.js. */
const MAIN = opt('main', null) ? path.resolve(opt('main', null)) : undefined;

const now = () => performance.now();
/**
 * Polls `fn` every `ms` until it returns truthy. A failed poll (e.g. a 503
 * while Redis is busy with someone else's script) is retried and counted in
 * `hiccups`, shown with the round; throws after TIMEOUT_MS naming `what`.
 */
async function until(what, fn, ms = 20) {
  const deadline = Date.now() + TIMEOUT_MS;
  let last = null;
  for (;;) {
    try {
      const v = await fn();
      if (v) return v;
    } catch (e) {
      hiccups++;
      last = e;
    }
    if (Date.now() > deadline) throw new Error(`timed out after ${TIMEOUT_MS / 1000} s waiting for ${what}${last ? ` (last error: ${last.message})` : ''}`);
    await sleep(ms);
  }
}
let hiccups = 0;
const expect = (r, status, what) => {
  if (r.status !== status) throw new Error(`${what} answered ${r.status}: ${JSON.stringify(r.body).slice(0, 300)}`);
  return r.body;
};

// ------------------------------------------------------------ CPU split ---
/** The counters of every process involved, at one instant. */
async function cpuSnapshot(ctx) {
  const c = process.cpuUsage();
  return {
    servers: ctx.servers.map((s) => processCpu(s.proc.pid)),
    redis: await redisCpu(ctx.redis),
    commands: await redisCommands(ctx.redis),
    pg: postgresCpu(ctx.database),
    client: (c.user + c.system) / 1e6,
  };
}
/** µs of CPU per job between two snapshots, by process. */
function cpuPerJob(a, b, n) {
  const us = (s) => (s * 1e6) / n;
  const out = {};
  a.servers.forEach((v, i) => (out[SERVER_NAMES[i]] = us(b.servers[i] - v)));
  out.redis = us(b.redis - a.redis);
  const pg = postgresDelta(a.pg, b.pg);
  out.pg = us(pg.all);
  out.pgOurs = us(pg.ours);
  out.client = us(b.client - a.client);
  // Not a number: printed with the round (calls per job × µs per call).
  Object.defineProperty(out, 'commands', { value: commandsPerJob(a.commands, b.commands, n), enumerable: false });
  return out;
}
const cpuLine = (c) => [...SERVER_NAMES, 'redis', 'pg'].map((k) => `${k} ${Math.round(c[k])}`).join(' ');
const SERVER_NAMES = SPLIT_AUDIT ? ['api+worker', 'audit'] : ['sluice'];

// ------------------------------------------------------------- Sluice ---
const job = (queue, i) => ({ type: 'diag.echo', queue, payload: { i } });

/** Row 1 for Sluice: jobs/s until the last `enqueued` is in PostgreSQL. */
async function sluiceEnqueue(ctx, queue, N) {
  expect(await ctx.api.post(`/queues/${queue}/pause`), 200, 'pause');
  // The queue's rows in PostgreSQL from the counters the writer's triggers keep exact (job_counts): a read of a few
  // rows, where count(*) of the queue's jobs read every row of every round so far, 50 times a second, on the same cores.
  const jobRows = async () => (await ctx.pg.query('SELECT coalesce(sum(n), 0)::int AS n FROM job_counts WHERE queue = $1', [queue])).rows[0].n;
  const before = await jobRows(); // the queue may hold earlier rounds' jobs
  const c0 = await cpuSnapshot(ctx);
  const t0 = now();
  let lastId = null;
  for (let i = 0; i < N; i += BATCH) {
    const jobs = [];
    for (let j = i; j < Math.min(N, i + BATCH); j++) jobs.push(job(queue, j));
    const body = expect(await ctx.api.post('/jobs/batch', { jobs }, { timeoutMs: 60000, headers: MINIMAL ? { prefer: 'return=minimal' } : {} }), 201, 'POST /jobs/batch');
    lastId = body.jobs[body.jobs.length - 1].id;
  }
  const tPosted = now();
  await until(`${N} more jobs of ${queue} in PostgreSQL`, async () => (await jobRows()) >= before + N);
  const t1 = now();
  const cpu = cpuPerJob(c0, await cpuSnapshot(ctx), N);
  return { rate: N / ((t1 - t0) / 1000), postedRate: N / ((tPosted - t0) / 1000), cpu, lastId };
}

/** Row 2 for Sluice: jobs/s from resume until the history is complete (counts.completed up by N). */
async function sluiceProcess(ctx, queue, lastId, N) {
  const completed = async () => expect(await ctx.api.get(`/queues/${queue}`), 200, 'GET /queues/:name').counts.completed;
  const before = await completed();
  const c0 = await cpuSnapshot(ctx);
  const t0 = now();
  expect(await ctx.api.post(`/queues/${queue}/resume`), 200, 'resume');
  await until(`counts.completed = ${before} + ${N} on ${queue}`, async () => (await completed()) >= before + N);
  await until(`the last job's completed event`, async () => expect(await ctx.api.get(`/jobs/${lastId}/events`), 200, 'GET /jobs/:id/events').items.some((e) => e.event === 'completed'));
  const t1 = now();
  const cpu = cpuPerJob(c0, await cpuSnapshot(ctx), N);
  return { rate: N / ((t1 - t0) / 1000), cpu };
}

/** Row 4 for Sluice: ms from POST /jobs to the job's startedAt, one job at a time. */
async function sluiceLatency(ctx, queue) {
  expect(await ctx.api.put(`/queues/${queue}`, {}), 200, 'PUT /queues/:name');
  await sleep(1500); // QUEUES=* re-reads the known queues every second
  const lat = [];
  const post = []; // the POST /jobs round trip alone, µs precision: how much of the latency is HTTP
  const noop = []; // and a GET /healthz round trip (after the job started), for the client's and server's HTTP floor
  for (let i = 0; i < SAMPLES; i++) {
    const t0 = Date.now();
    const p0 = now();
    const { id } = expect(await ctx.api.post('/jobs', job(queue, i)), 201, 'POST /jobs');
    post.push(now() - p0);
    await sleep(3); // the start is read from the job afterwards: polling need not be tight
    const started = await until('a latency job to start', async () => expect(await ctx.api.get(`/jobs/${id}`), 200, 'GET /jobs/:id').startedAt, 5);
    lat.push(Date.parse(started) - t0);
    const h0 = now();
    expect(await ctx.api.get('/healthz'), 200, 'GET /healthz');
    noop.push(now() - h0);
    await sleep(5); // let the worker go idle again
  }
  return { p50: pct(lat, 50), p99: pct(lat, 99), postP50: pct(post, 50), postP99: pct(post, 99), noopP50: pct(noop, 50), noopP99: pct(noop, 99) };
}

// ------------------------------------------------------------- BullMQ ---
/** Rows 1 and 2 for BullMQ: addBulk, then a Worker over those jobs. */
async function bullRows(ctx, N) {
  const q = systems.bullmq({ concurrency: CONC, inflight: 1 });
  ctx.bullQueues.add(q);
  try {
    const c0 = await cpuSnapshot(ctx);
    const enq = await q.addBatch(N, BATCH);
    const c1 = await cpuSnapshot(ctx);
    const { finished } = await q.process(N);
    const proc = await finished;
    const c2 = await cpuSnapshot(ctx);
    return { enqueue: { rate: enq, cpu: cpuPerJob(c0, c1, N) }, process: { rate: proc, cpu: cpuPerJob(c1, c2, N) } };
  } finally {
    await q.clean();
    await q.close();
    ctx.bullQueues.delete(q);
  }
}

/** Row 4 for BullMQ: ms from Queue.add to the handler, one job at a time (engine.js's method, in ms). */
async function bullLatency(ctx) {
  const q = systems.bullmq({ concurrency: CONC, inflight: 1 });
  ctx.bullQueues.add(q);
  try {
    const lat = [];
    let t0 = 0;
    let started;
    const { finished } = await q.process(SAMPLES, () => {
      lat.push(Date.now() - t0);
      started();
    });
    await sleep(300);
    for (let i = 0; i < SAMPLES; i++) {
      const s = new Promise((r) => (started = r));
      t0 = Date.now();
      await q.addSingle(1);
      await s;
      await sleep(5);
    }
    await finished;
    return { p50: pct(lat, 50), p99: pct(lat, 99) };
  } finally {
    await q.clean();
    await q.close();
    ctx.bullQueues.delete(q);
  }
}

// ------------------------------------------------------------ HTTP row ---
/** Row 3: single POST /jobs vs GET /healthz, order alternating by round. */
async function httpRow(ctx, round) {
  const base = { connections: CONNECTIONS, duration: HTTP_DURATION };
  const noop = () => autocannon({ ...base, url: `${ctx.api.base}/healthz` });
  const post = () =>
    autocannon({ ...base, url: `${ctx.api.base}/jobs`, method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(job('pipe-single', 0)) });
  const [a, b] = round % 2 ? [await noop(), await post()] : [await post(), await noop()].reverse();
  // The accepted jobs wait in their paused queue; let the mirror write them before the next row.
  await until('the mirror to catch up after POST /jobs', async () => (await ctx.api.get('/dashboard/stats')).body?.auditLagMs === 0, 50);
  return { noop: a.rps, post: b.rps, postNon2xx: b.non2xx, postP99: b.p99 };
}

// --------------------------------------------------------------- peers ---
const LABEL = { sluice: 'Sluice', pgboss: 'pg-boss 12', bullhist: 'BullMQ + history', bull: 'bare BullMQ' };
const SYSTEMS = ['sluice', ...PEERS];

/** Rows 1 and 2 of one system for n jobs: `{enq: {rate, cpu}, proc: {rate, cpu}}` (Sluice's enq adds postedRate). */
async function systemRows(ctx, sys, n, round) {
  if (sys === 'sluice') {
    const queue = queueOf(round);
    const enq = await sluiceEnqueue(ctx, queue, n);
    await redisQuiet();
    return { enq, proc: await sluiceProcess(ctx, queue, enq.lastId, n) };
  }
  if (sys === 'bull') {
    const b = await bullRows(ctx, n);
    return { enq: b.enqueue, proc: b.process };
  }
  const peer = ctx.peers[sys];
  const r = await peer.rows(n, BATCH, () => cpuSnapshot(ctx));
  return { enq: { rate: r.enqueue.rate, cpu: cpuPerJob(r.enqueue.c0, r.enqueue.c1, n) }, proc: { rate: r.process.rate, cpu: cpuPerJob(r.process.c1, r.process.c2, n) } };
}

/** Row 4 of one system: `{p50, p99}` ms (Sluice's adds its round trips). */
async function systemLatency(ctx, sys, round) {
  if (sys === 'sluice') return sluiceLatency(ctx, `pipe-lat${round}`);
  if (sys === 'bull') return bullLatency(ctx);
  if (sys === 'pgboss') {
    const lat = await ctx.peers.pgboss.latency(PGBOSS_SAMPLES);
    return { p50: pct(lat, 50), p99: pct(lat, 99) };
  }
  return null; // BullMQ + history starts a job as bare BullMQ does: its history is written after the start
}

/** The systems in round `round`'s order: rotated by one each round, so each goes first in turn. */
const orderOf = (round) => SYSTEMS.map((_, i) => SYSTEMS[(i + round - 1) % SYSTEMS.length]);

// --------------------------------------------------------------- main ---
async function main() {
  const prefix = `bench-pipe-${process.pid}`;
  const database = `sluice_bench_pipe_${process.pid}`;
  const dbUrl = new URL(PG_BASE);
  dbUrl.pathname = `/${database}`;
  // A redis-server of our own (no persistence, as the shared one on 6379) unless --shared-redis:
  // INFO cpu counts every client of a server, and another's long script there would stall this run.
  let privateRedis = null;
  if (!SHARED_REDIS) {
    const port = await freePort();
    privateRedis = new RedisNode({ name: 'pipeline', port, dir: fs.mkdtempSync(path.join(os.tmpdir(), 'sluice-pipe-redis-')), extra: ['appendonly no'] });
    await privateRedis.start();
    process.env.REDIS_URL = `redis://127.0.0.1:${port}`; // systems.js reads it at each use
  }
  const REDIS_URL = systems.redisUrl();
  const ctx = { servers: [], bullQueues: new Set(), database, redis: new IORedis(REDIS_URL), pg: null, api: null, peers: {} };
  const env = {
    REDIS_URL,
    REDIS_PREFIX: prefix,
    DATABASE_URL: dbUrl.toString(),
    DIAGNOSTIC_HANDLERS: 'true',
    LOG_LEVEL: 'warn',
    AUTH: 'off',
    ...(WORKER_CONC ? { WORKER_CONCURRENCY: WORKER_CONC } : {}),
  };
  let stopping = false;
  const finish = async () => {
    if (stopping) return;
    stopping = true;
    for (const q of ctx.bullQueues) await q.clean().catch(() => undefined), await q.close().catch(() => undefined);
    for (const p of Object.values(ctx.peers)) await p.close().catch(() => undefined);
    await ctx.pg?.end().catch(() => undefined);
    for (const s of ctx.servers) await s.stop(20000);
    ctx.redis.disconnect();
    await cleanup({ prefix, databaseUrl: dbUrl.toString(), dropDb: true, redisUrl: REDIS_URL });
    if (privateRedis) {
      await privateRedis.stop('SIGKILL').catch(() => undefined);
      fs.rmSync(privateRedis.dir, { recursive: true, force: true });
    }
  };
  process.once('SIGINT', () => finish().finally(() => process.exit(130)));
  const byN = new Map(NS.map((n) => [n, []]));
  const lats = [];
  const https = [];
  try {
    // The main server first (it migrates the new database), then the audit one.
    const main = startServer({ port: await freePort(), main: MAIN, env: { ...env, ROLE: SPLIT_AUDIT ? 'api,worker,scheduler' : 'all' } });
    ctx.servers.push(main);
    await waitReady(main);
    if (SPLIT_AUDIT) {
      const audit = startServer({ port: await freePort(), main: MAIN, env: { ...env, ROLE: 'audit' } });
      ctx.servers.push(audit);
      await waitReady(audit);
    }
    ctx.api = client(main.url);
    ctx.pg = new Client({ connectionString: dbUrl.toString() });
    await ctx.pg.connect();
    if (PEERS.includes('pgboss')) ctx.peers.pgboss = await peers.pgBoss({ databaseUrl: dbUrl.toString() });
    if (PEERS.includes('bullhist')) ctx.peers.bullhist = await peers.bullHistory({ databaseUrl: dbUrl.toString(), concurrency: CONC });
    expect(await ctx.api.post('/queues/pipe-single/pause'), 200, 'pause');
    const la = os.loadavg().map((x) => x.toFixed(2)).join(' ');
    console.log(`# ${os.cpus().length} × ${os.cpus()[0].model}, node ${process.version}, load average ${la}`);
    console.log(`# Redis ${REDIS_URL}${privateRedis ? ' (a redis-server of its own)' : ''}, PostgreSQL ${PG_BASE.replace(/\/[^/]*$/, '')} (database ${database}, shared by every system)`);
    console.log(
      `# N=${NS.join(' and ')}, batches of ${BATCH}, ${ROUNDS} rounds each; systems ${SYSTEMS.map((x) => LABEL[x]).join(', ')}; Sluice ${SPLIT_AUDIT ? 'ROLE=api,worker,scheduler (pid ' + main.proc.pid + ') + ROLE=audit (pid ' + ctx.servers[1].proc.pid + ')' : 'ROLE=all (pid ' + main.proc.pid + ')'}, WORKER_CONCURRENCY ${WORKER_CONC ?? 'default'}, batches ${MINIMAL ? 'with' : 'without'} Prefer: return=minimal; BullMQ Worker concurrency ${CONC}`,
    );

    // Warm-up, not recorded: JIT, connection pools, the first migration-fresh tables; each system once.
    for (const sys of SYSTEMS) await systemRows(ctx, sys, Math.min(NS[0], 20000), 0);

    // Rows 1 and 2 first, all rounds of each N, on a server holding nothing else; then
    // row 3 (whose accepted jobs stay behind in their paused queue), then row 4.
    const load = () => `load ${os.loadavg()[0].toFixed(2)}${hiccups ? `, ${hiccups} failed polls so far (retried)` : ''}`;
    for (const n of NS) {
      for (let round = 1; round <= ROUNDS; round++) {
        const r = { round };
        const order = orderOf(round);
        for (const sys of order) {
          await redisQuiet();
          r[sys] = await systemRows(ctx, sys, n, round);
        }
        byN.get(n).push(r);
        console.log(
          `N=${n} round ${round} (${order.map((x) => LABEL[x]).join(' → ')}): enqueue ${SYSTEMS.map((x) => `${LABEL[x]} ${fmt(r[x].enq.rate)}/s`).join(', ')} (Sluice's HTTP done at ${fmt(r.sluice.enq.postedRate)}/s); ` +
            `processing ${SYSTEMS.map((x) => `${LABEL[x]} ${fmt(r[x].proc.rate)}/s`).join(', ')}; ${load()}`,
        );
        console.log(`  Sluice CPU µs/job enqueue ${cpuLine(r.sluice.enq.cpu)}, processing ${cpuLine(r.sluice.proc.cpu)}; Redis per job, processing: Sluice ${r.sluice.proc.cpu.commands}${r.bull ? `; BullMQ ${r.bull.proc.cpu.commands}` : ''}`);
      }
    }
    // How PostgreSQL reached the history tables (a growing seq_tup_read means scans that grow with the tables).
    const st = await ctx.pg.query(
      // The tables are partitioned by day (src/postgres/partitions.ts): summed over each parent's partitions.
      `SELECT p.relname, sum(s.n_live_tup) AS n_live_tup, sum(s.seq_scan) AS seq_scan, sum(s.seq_tup_read) AS seq_tup_read, sum(s.idx_scan) AS idx_scan,
              bool_or(s.last_autoanalyze IS NOT NULL) AS analyzed
       FROM pg_inherits i JOIN pg_class p ON p.oid = i.inhparent JOIN pg_stat_user_tables s ON s.relid = i.inhrelid
       WHERE p.relname IN ('jobs', 'job_events', 'job_executions') GROUP BY p.relname ORDER BY p.relname`,
    );
    for (const t of st.rows) console.log(`# pg ${t.relname}: ${fmt(t.n_live_tup)} rows, ${fmt(t.seq_scan)} seq scans reading ${fmt(t.seq_tup_read)} rows, ${fmt(t.idx_scan ?? 0)} index scans, auto-analyzed ${t.analyzed}`);
    for (let round = 1; HTTP_DURATION > 0 && round <= ROUNDS; round++) {
      const h = await httpRow(ctx, round);
      https.push(h);
      console.log(`round ${round}: POST /jobs ${fmt(h.post)} req/s (non-2xx ${h.postNon2xx}, p99 ${h.postP99} ms) GET /healthz ${fmt(h.noop)} req/s; ${load()}`);
    }
    // --samples 0 skips the row (BullMQ's side would wait for a job count of zero that its worker never reports).
    for (let round = 1; SAMPLES > 0 && round <= ROUNDS; round++) {
      const l = {};
      for (const sys of orderOf(round)) {
        await redisQuiet();
        const got = await systemLatency(ctx, sys, round);
        if (got) l[sys] = got;
      }
      lats.push(l);
      const extra = l.sluice ? ` (Sluice's round trips p50/p99: POST /jobs ${l.sluice.postP50.toFixed(2)}/${l.sluice.postP99.toFixed(2)} ms, GET /healthz ${l.sluice.noopP50.toFixed(2)}/${l.sluice.noopP99.toFixed(2)} ms)` : '';
      console.log(`round ${round}: idle latency p50/p99 ${Object.entries(l).map(([k, v]) => `${LABEL[k]} ${v.p50}/${v.p99} ms`).join(', ')}${extra}; ${load()}`);
    }
  } finally {
    await finish();
  }
  for (const [n, rows] of byN) report(n, rows);
  reportOnce(https, lats);
}

// ------------------------------------------------------------- report ---
const range = (xs, f = fmt) => `${f(median(xs))} (${f(Math.min(...xs))}–${f(Math.max(...xs))})`;
const verdict = (ok) => (ok ? 'met' : 'NOT met');
/** Median of the per-round ratios, and the ratios. */
function ratio(rows, a, b) {
  const per = rows.map((r) => a(r) / b(r));
  return { paired: median(per), per, text: `${median(per).toFixed(2)}× (${per.map((v) => v.toFixed(2)).join(', ')})` };
}
/** Processes counted in a system's CPU total (PostgreSQL as this database's backends: the machine is shared). */
const PARTS = {
  sluice: () => [...SERVER_NAMES, 'redis', 'pgOurs'],
  pgboss: () => ['client', 'pgOurs'],
  bullhist: () => ['client', 'redis', 'pgOurs'],
  bull: () => ['client', 'redis'],
};
/** Issue 35's targets: Sluice ÷ peer, per row. */
const TARGETS = {
  proc: { pgboss: 1.5, bullhist: 1.5, bull: 0.8 },
  enq: { pgboss: 0.7, bullhist: 1.5 },
};
const CPU_TARGET = { enq: 50, proc: 100 };

function report(n, rows) {
  const out = [];
  out.push(`\nN = ${fmt(n)}: medians (ranges) of ${rows.length} rounds; ratio = median of the per-round Sluice ÷ peer ratios (per round in brackets)`);
  out.push(`| row | ${SYSTEMS.map((x) => LABEL[x]).join(' | ')} |`);
  out.push(`|---|${SYSTEMS.map(() => '---:').join('|')}|`);
  const rowLine = (what, key) => out.push(`| ${what} | ${SYSTEMS.map((x) => range(rows.map((r) => r[x][key].rate))).join(' | ')} |`);
  rowLine(`enqueue until in the history (Sluice: POST /jobs/batch of ${BATCH}${MINIMAL ? ', return=minimal' : ''}), jobs/s`, 'enq');
  out.push(`| (enqueue, Sluice's HTTP calls alone, jobs/s) | ${range(rows.map((r) => r.sluice.enq.postedRate))} |${PEERS.map(() => '').join(' |')} |`);
  rowLine('processing until the history is complete, jobs/s', 'proc');
  out.push('');
  out.push('| Sluice ÷ | enqueue | target | processing | target |');
  out.push('|---|---:|---|---:|---|');
  for (const peer of PEERS) {
    const e = ratio(rows, (r) => r.sluice.enq.rate, (r) => r[peer].enq.rate);
    const p = ratio(rows, (r) => r.sluice.proc.rate, (r) => r[peer].proc.rate);
    const t = (k, x) => (TARGETS[k][peer] ? `≥ ${TARGETS[k][peer]}× ${verdict(x.paired >= TARGETS[k][peer])}` : '');
    out.push(`| ${LABEL[peer]} | ${e.text} | ${t('enq', e)} | ${p.text} | ${t('proc', p)} |`);
  }
  out.push('');
  out.push('CPU per job, µs (medians over rounds); pg = every postgres process (anyone\'s), pgOurs = this database\'s backends; client = this script (where pg-boss and BullMQ run)');
  const procs = [...SERVER_NAMES, 'redis', 'pg', 'pgOurs', 'client'];
  out.push(`| phase | system | ${procs.join(' | ')} | total | target |`);
  out.push(`|---|---|${procs.map(() => '---:').join('|')}|---:|---|`);
  const cell = (v) => (Number.isFinite(v) ? v.toFixed(1) : '–');
  for (const phase of ['enq', 'proc']) {
    for (const sys of SYSTEMS) {
      const m = Object.fromEntries(procs.map((p) => [p, median(rows.map((r) => r[sys][phase].cpu[p]))]));
      const total = PARTS[sys]().reduce((t, p) => t + (Number.isFinite(m[p]) ? m[p] : 0), 0);
      const target = sys === 'sluice' ? `≤ ${CPU_TARGET[phase]} ${verdict(total <= CPU_TARGET[phase])}` : '';
      out.push(`| ${phase === 'enq' ? 'enqueue' : 'processing'} | ${LABEL[sys]} | ${procs.map((p) => cell(m[p])).join(' | ')} | ${cell(total)} | ${target} |`);
    }
  }
  out.push(
    '(total: Sluice = its server process(es) + Redis + pgOurs, its load client apart; pg-boss = client + pgOurs; BullMQ + history = client + Redis + pgOurs; bare BullMQ = client + Redis. Columns outside a system\'s total are idle cost and whatever else ran.)',
  );
  console.log(out.join('\n'));
}

function reportOnce(https, lats) {
  const out = [''];
  if (https.length) {
    const h = https.map((x) => x.post / x.noop);
    out.push(`single POST /jobs ${range(https.map((x) => x.post))} req/s vs GET /healthz ${range(https.map((x) => x.noop))} req/s on the same server: ${median(h).toFixed(2)}× (${h.map((v) => v.toFixed(2)).join(', ')})`);
  }
  if (lats.length) {
    const ms = (x) => String(x);
    const line = (sys) => `${LABEL[sys]} ${ms(median(lats.map((l) => l[sys].p50)))} / ${range(lats.map((l) => l[sys].p99), ms)}`;
    const have = SYSTEMS.filter((x) => lats[0][x]);
    out.push(`idle enqueue → handler start, p50 / p99 ms (medians, p99 range): ${have.map(line).join('; ')}`);
    if (lats[0].bull) {
      const s = median(lats.map((l) => l.sluice.p99));
      const b = median(lats.map((l) => l.bull.p99));
      out.push(`  target p99 ≤ BullMQ's: ${verdict(s <= b)}`);
    }
  }
  console.log(out.join('\n'));
}

main().then(
  () => process.exit(0),
  (e) => {
    console.error(e);
    process.exit(1);
  },
);
