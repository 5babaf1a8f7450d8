#!/usr/bin/env node
/*
 * Pipeline benchmark (issue 22): the whole write path, HTTP → Redis → worker →
 * mirror writer → PostgreSQL, of a real Sluice process beside BullMQ 6.7 on
 * the same Redis. Alternating systems, several rounds; medians, ranges and
 * ratios; and a CPU split per job by process.
 *
 *   npm run build && npm run bench:pipeline
 *   node scripts/bench/pipeline.js --n 5000 --rounds 1 --http-duration 3      # quick
 *   node scripts/bench/pipeline.js --audit-process    # the mirror writer in a process of its own
 *
 * Rows (rows 1–2 for every round, then row 3's rounds, then row 4's; Sluice
 * and BullMQ alternate which goes first):
 *  1. enqueue: N no-op jobs (`diag.echo`) with POST /jobs/batch, --batch per
 *     request, into a paused queue, timed until every job's `enqueued` is
 *     mirrored (its `jobs` row exists in PostgreSQL: the queue's job_counts up by N) — vs BullMQ addBulk of
 *     --batch per call.
 *  2. processing until history complete: resume that queue; timed until
 *     GET /queues/:name says counts.completed is up by N (a PostgreSQL count) and the
 *     last job's GET /jobs/:id/events has its `completed` — vs a BullMQ Worker
 *     (concurrency --concurrency, removeOnComplete) processing its N jobs.
 *  3. single POST /jobs (into a paused queue of its own) vs GET /healthz, the
 *     server's no-op endpoint, on the same server: autocannon in a child
 *     process, --connections, --http-duration s each (0 skips the row).
 *     scripts/bench/http.js measures the same on a ROLE=api server.
 *  4. idle latency, enqueue → handler start: one job at a time into an idle
 *     queue, --samples of them; Sluice: Date.now() before POST /jobs to the
 *     job's startedAt (set by the claim, Redis clock); BullMQ: Date.now() before
 *     Queue.add to Date.now() in the handler. Both in whole milliseconds.
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
 * Options: --n 20000 --rounds 3 --batch 1000 --concurrency 50 (BullMQ's
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

const args = process.argv.slice(2);
const opt = (name, def) => (args.includes(`--${name}`) ? args[args.indexOf(`--${name}`) + 1] : def);
const N = Number(opt('n', 20000));
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
async function sluiceEnqueue(ctx, queue) {
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
    const body = expect(await ctx.api.post('/jobs/batch', { jobs }, { timeoutMs: 60000 }), 201, 'POST /jobs/batch');
    lastId = body.jobs[body.jobs.length - 1].id;
  }
  const tPosted = now();
  await until(`${N} more jobs of ${queue} in PostgreSQL`, async () => (await jobRows()) >= before + N);
  const t1 = now();
  const cpu = cpuPerJob(c0, await cpuSnapshot(ctx), N);
  return { rate: N / ((t1 - t0) / 1000), postedRate: N / ((tPosted - t0) / 1000), cpu, lastId };
}

/** Row 2 for Sluice: jobs/s from resume until the history is complete (counts.completed up by N). */
async function sluiceProcess(ctx, queue, lastId) {
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
async function bullRows(ctx) {
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
  const ctx = { servers: [], bullQueues: new Set(), database, redis: new IORedis(REDIS_URL), pg: null, api: null };
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
  const rows = [];
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
    expect(await ctx.api.post('/queues/pipe-single/pause'), 200, 'pause');
    const la = os.loadavg().map((x) => x.toFixed(2)).join(' ');
    console.log(`# ${os.cpus().length} × ${os.cpus()[0].model}, node ${process.version}, load average ${la}`);
    console.log(`# Redis ${REDIS_URL}${privateRedis ? ' (a redis-server of its own)' : ''}, PostgreSQL ${PG_BASE.replace(/\/[^/]*$/, '')} (database ${database})`);
    console.log(`# N=${N}, batches of ${BATCH}, ${ROUNDS} rounds; Sluice ${SPLIT_AUDIT ? 'ROLE=api,worker,scheduler (pid ' + main.proc.pid + ') + ROLE=audit (pid ' + ctx.servers[1].proc.pid + ')' : 'ROLE=all (pid ' + main.proc.pid + ')'}, WORKER_CONCURRENCY ${WORKER_CONC ?? 'default'}; BullMQ Worker concurrency ${CONC}`);

    // Warm-up, not recorded: JIT, connection pools, the first migration-fresh tables.
    {
      const e = await sluiceEnqueue(ctx, queueOf(0));
      await sluiceProcess(ctx, queueOf(0), e.lastId);
      await bullRows(ctx);
    }

    // Rows 1 and 2 first, all rounds, on a server holding nothing else; then
    // row 3 (whose accepted jobs stay behind in their paused queue), then row 4.
    const load = () => `load ${os.loadavg()[0].toFixed(2)}${hiccups ? `, ${hiccups} failed polls so far (retried)` : ''}`;
    for (let round = 1; round <= ROUNDS; round++) {
      const r = { round };
      const order = round % 2 ? ['sluice', 'bull'] : ['bull', 'sluice'];
      for (const sys of order) {
        await redisQuiet();
        if (sys === 'sluice') {
          const queue = queueOf(round);
          r.sEnq = await sluiceEnqueue(ctx, queue);
          await redisQuiet();
          r.sProc = await sluiceProcess(ctx, queue, r.sEnq.lastId);
        } else {
          const b = await bullRows(ctx);
          r.bEnq = b.enqueue;
          r.bProc = b.process;
        }
      }
      rows.push(r);
      console.log(
        `round ${round} (${order[0]} first): enqueue Sluice ${fmt(r.sEnq.rate)}/s (HTTP done at ${fmt(r.sEnq.postedRate)}/s) BullMQ ${fmt(r.bEnq.rate)}/s; ` +
          `processing Sluice ${fmt(r.sProc.rate)}/s BullMQ ${fmt(r.bProc.rate)}/s; ` +
          `Sluice CPU µs/job enqueue ${cpuLine(r.sEnq.cpu)}, processing ${cpuLine(r.sProc.cpu)}; ${load()}`,
      );
      console.log(`  Redis per job, processing: Sluice ${r.sProc.cpu.commands}; BullMQ ${r.bProc.cpu.commands}`);
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
    for (const r of HTTP_DURATION > 0 ? rows : []) {
      r.http = await httpRow(ctx, r.round);
      console.log(`round ${r.round}: POST /jobs ${fmt(r.http.post)} req/s (non-2xx ${r.http.postNon2xx}, p99 ${r.http.postP99} ms) GET /healthz ${fmt(r.http.noop)} req/s; ${load()}`);
    }
    // --samples 0 skips the row (BullMQ's side would wait for a job count of zero that its worker never reports).
    for (const r of SAMPLES > 0 ? rows : []) {
      await redisQuiet();
      const q = `pipe-lat${r.round}`;
      [r.sLat, r.bLat] = r.round % 2 ? [await sluiceLatency(ctx, q), await bullLatency(ctx)] : [await bullLatency(ctx), await sluiceLatency(ctx, q)].reverse();
      console.log(`round ${r.round}: idle latency p50/p99 Sluice ${r.sLat.p50}/${r.sLat.p99} ms (round trips p50/p99: POST /jobs ${r.sLat.postP50.toFixed(2)}/${r.sLat.postP99.toFixed(2)} ms, GET /healthz ${r.sLat.noopP50.toFixed(2)}/${r.sLat.noopP99.toFixed(2)} ms) BullMQ ${r.bLat.p50}/${r.bLat.p99} ms; ${load()}`);
    }
  } finally {
    await finish();
  }
  report(rows);
}

// ------------------------------------------------------------- report ---
function report(rows) {
  const stat = (sel) => {
    const xs = rows.map(sel);
    return { med: median(xs), min: Math.min(...xs), max: Math.max(...xs) };
  };
  const range = (s, f = fmt) => `${f(s.med)} (${f(s.min)}–${f(s.max)})`;
  const ratio = (a, b) => {
    const per = rows.map((r) => a(r) / b(r));
    return { paired: median(per), per };
  };
  const verdict = (ok) => (ok ? 'met' : 'NOT met');
  const out = [];
  out.push(`\nmedians (ranges) of ${rows.length} rounds; ratio = median of the per-round Sluice/BullMQ ratios (rounds: …)`);
  out.push('| row | Sluice | BullMQ 6.7 | ratio | target |');
  out.push('|---|---:|---:|---:|---|');
  const enq = ratio((r) => r.sEnq.rate, (r) => r.bEnq.rate);
  const proc = ratio((r) => r.sProc.rate, (r) => r.bProc.rate);
  const rs = (x) => `${x.paired.toFixed(2)}× (${x.per.map((v) => v.toFixed(2)).join(', ')})`;
  out.push(`| enqueue, POST /jobs/batch of ${BATCH} until mirrored vs addBulk, jobs/s | ${range(stat((r) => r.sEnq.rate))} | ${range(stat((r) => r.bEnq.rate))} | ${rs(enq)} | ≥ 1.0× ${verdict(enq.paired >= 1)} |`);
  out.push(`| (enqueue, Sluice's HTTP calls alone, jobs/s) | ${range(stat((r) => r.sEnq.postedRate))} | | | |`);
  out.push(`| processing until history complete vs Worker, jobs/s | ${range(stat((r) => r.sProc.rate))} | ${range(stat((r) => r.bProc.rate))} | ${rs(proc)} | ≥ 1.2× ${verdict(proc.paired >= 1.2)} |`);
  if (rows[0].http) {
    const h = ratio((r) => r.http.post, (r) => r.http.noop);
    out.push(`| single POST /jobs vs GET /healthz (same server), req/s | ${range(stat((r) => r.http.post))} | ${range(stat((r) => r.http.noop))} (GET /healthz) | ${rs(h)} | ≥ 0.5× ${verdict(h.paired >= 0.5)} |`);
  }
  if (rows[0].sLat) {
    const sp99 = stat((r) => r.sLat.p99);
    const bp99 = stat((r) => r.bLat.p99);
    const ms = (x) => String(x);
    out.push(`| idle enqueue → handler start, p50 / p99 ms | ${ms(stat((r) => r.sLat.p50).med)} / ${range(sp99, ms)} | ${ms(stat((r) => r.bLat.p50).med)} / ${range(bp99, ms)} | | p99 ≤ BullMQ's ${verdict(sp99.med <= bp99.med)} |`);
  }
  out.push('');
  out.push('CPU per job, µs (medians over rounds); PostgreSQL = every postgres process ("ours" = this database\'s backends); client = this script');
  const procs = [...SERVER_NAMES, 'redis', 'pg', 'pgOurs', 'client'];
  out.push(`| phase | system | ${procs.join(' | ')} | total |`);
  out.push(`|---|---|${procs.map(() => '---:').join('|')}|---:|`);
  /** total: Sluice = its server process(es) + Redis + PostgreSQL; BullMQ = the client (producer, Worker) + Redis. */
  const cpuRow = (phase, sys, sel) => {
    const m = Object.fromEntries(procs.map((p) => [p, median(rows.map((r) => sel(r)[p]))]));
    const parts = sys === 'Sluice' ? [...SERVER_NAMES, 'redis', 'pg'] : ['client', 'redis'];
    const total = parts.reduce((t, p) => t + (Number.isFinite(m[p]) ? m[p] : 0), 0);
    const cell = (v) => (Number.isFinite(v) ? v.toFixed(1) : '–');
    out.push(`| ${phase} | ${sys} | ${procs.map((p) => cell(m[p])).join(' | ')} | ${cell(total)} |`);
  };
  cpuRow('enqueue', 'Sluice', (r) => r.sEnq.cpu);
  cpuRow('enqueue', 'BullMQ', (r) => r.bEnq.cpu);
  cpuRow('processing', 'Sluice', (r) => r.sProc.cpu);
  cpuRow('processing', 'BullMQ', (r) => r.bProc.cpu);
  out.push('(total: Sluice = server process(es) + Redis + PostgreSQL, its client apart; BullMQ = client (its producer and Worker run there) + Redis. In BullMQ\'s rows the Sluice and PostgreSQL columns are idle cost and whatever else ran.)');
  console.log(out.join('\n'));
}

main().then(
  () => process.exit(0),
  (e) => {
    console.error(e);
    process.exit(1);
  },
);
