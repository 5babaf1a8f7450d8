#!/usr/bin/env node
/*
 * `npm run soak` (issue 19; not part of the test suite): a mixed workload
 * for N minutes while a chaos loop kills workers, restarts Redis (AOF) and
 * PostgreSQL and fails Sentinel over; then checks, from the history in
 * PostgreSQL, that no accepted job was lost, that no job completed twice and
 * that every re-run shows why (a `stalled` event), and that the history of
 * every job is whole.
 *
 *   node scripts/soak.js [--minutes 5] [--rate 20] [--seed N] [--no-sentinel]
 *                        [--workers 3] [--chaos-min 20] [--chaos-max 60]
 *                        [--drain-timeout 180] [--actions a,b] [--min-replicas-to-write N]
 *                        [--keep]
 *
 * Everything runs on private processes on spare ports under one temporary
 * folder (removed at the end unless --keep): a Redis master with AOF
 * (appendfsync always, see AOF below), one replica and three sentinels
 * (quorum 2, down-after 1000 ms) — with --no-sentinel just the master, which
 * Sluice then reaches through REDIS_URL —, a PostgreSQL made with initdb, and
 * Sluice from dist/main.js: one ROLE=api,audit,scheduler process and
 * --workers ROLE=worker processes (diagnostic handlers, 3 s leases, 1 s
 * heartbeats, a 500 ms reaper). The shared Redis and PostgreSQL are never
 * touched. Everything is killed on exit and on Ctrl-C.
 *
 * Workload (seeded): POST /jobs and POST /jobs/batch at --rate jobs/s, each
 * job with its own idempotency key, so a request that failed during chaos
 * (network error, timeout, 429/5xx) is sent again, same body, until it is
 * accepted; diag.sleep of 10 ms .. 5 s, some delayed (up to 30 s), some with
 * priorities, some diag.fail that fail once then succeed, and a few that
 * always fail (maxAttempts 2: they must end in the dead-letter queue).
 * Every other job has maxAttempts 10, so chaos alone cannot dead-letter it.
 *
 * Chaos (seeded, one action at a time, every --chaos-min..--chaos-max s,
 * each logged with its time): SIGKILL a worker and start a new one; restart
 * the Redis master gracefully (SIGTERM, AOF); SIGKILL the master (with
 * sentinels: they fail over to the replica, and the old master comes back
 * as the new one's replica; without: it restarts from its AOF);
 * SENTINEL FAILOVER (sentinel mode); restart PostgreSQL (immediate stop, a
 * pause, start). After each action the soak waits until everything is
 * healthy again before it draws the next one.
 *
 * At the end: the workload stops, then the soak waits (--drain-timeout) for
 * every accepted job to be terminal in PostgreSQL and for the events streams
 * to be mirrored, and judges every job (scripts/lib/soak-check.js). Prints a
 * `SOAK {json}` line and a summary; exit 0 when every check passes, 1 when
 * one fails, 2 when the run itself broke (setup, bad arguments).
 *
 * AOF: appendfsync `always` on every data node. The check is "zero lost
 * acknowledged jobs" and a node is killed with SIGKILL and started again
 * from its AOF (without sentinels) or restarted gracefully: with `always`
 * each acknowledged write is in the AOF, fsynced, before the reply leaves,
 * so the soak measures Sluice rather than the fsync policy's window
 * (`everysec` may lose up to a second or two of acknowledged writes on a
 * machine crash, and defers even the write() while a slow fsync runs). The
 * cost, one fsync per event-loop turn, is small at soak rates.
 */
const { chmodSync, mkdtempSync, rmSync, readFileSync, existsSync, appendFileSync } = require('node:fs');
const { tmpdir } = require('node:os');
const path = require('node:path');
const net = require('node:net');
const { Client } = require('pg');
const { startServer, waitReady, ROOT } = require('./lib/server');
const { request, sleep } = require('./lib/http');
const { privatePostgres } = require('./lib/private-postgres');
const { RedisNode, SentinelNode, withClient } = require('./lib/private-redis');
const { loadHistory, judgeJob, percentile, trail } = require('./lib/soak-check');

const USAGE =
  'usage: node scripts/soak.js [--minutes 5] [--rate 20] [--seed N] [--no-sentinel] [--workers 3]\n' +
  '                            [--chaos-min 20] [--chaos-max 60] [--drain-timeout 180] [--keep] [--min-replicas-to-write N]\n' +
  '                            [--actions worker-kill,redis-restart,redis-kill,sentinel-failover,pg-restart]';

const QUEUES = ['soak-a', 'soak-b'];
const PREFIX = 'soak';
const MASTER_NAME = 'sluice-soak';
const ACTIONS = ['worker-kill', 'redis-restart', 'redis-kill', 'sentinel-failover', 'pg-restart'];

// ---------------------------------------------------------------- arguments

function parseArgs(argv) {
  const a = { minutes: 5, rate: 20, seed: null, sentinel: true, workers: 3, chaosMin: 20, chaosMax: 60, drainTimeout: 180, keep: false, actions: null, minReplicas: 0 };
  const num = (k, v, min) => {
    const x = Number(v);
    if (!Number.isFinite(x) || x < min) throw new Error(`${k} must be a number ≥ ${min}, got ${v}`);
    return x;
  };
  for (let i = 0; i < argv.length; i++) {
    const [k, inline] = argv[i].split('=', 2);
    const val = () => inline ?? argv[++i];
    if (k === '--minutes') a.minutes = num(k, val(), 0.1);
    else if (k === '--rate') a.rate = num(k, val(), 0.1);
    else if (k === '--seed') a.seed = Math.trunc(num(k, val(), 0)) >>> 0;
    else if (k === '--no-sentinel') a.sentinel = false;
    else if (k === '--workers') a.workers = Math.trunc(num(k, val(), 1));
    else if (k === '--chaos-min') a.chaosMin = num(k, val(), 1);
    else if (k === '--chaos-max') a.chaosMax = num(k, val(), 1);
    else if (k === '--drain-timeout') a.drainTimeout = num(k, val(), 10);
    else if (k === '--actions') a.actions = val().split(',').map((x) => x.trim()).filter(Boolean);
    else if (k === '--min-replicas-to-write') a.minReplicas = Math.trunc(num(k, val(), 0));
    else if (k === '--keep') a.keep = true;
    else if (k === '--help' || k === '-h') a.help = true;
    else throw new Error(`unknown argument ${argv[i]}`);
  }
  if (a.chaosMax < a.chaosMin) throw new Error('--chaos-max must be ≥ --chaos-min');
  if (a.seed === null) a.seed = (Math.random() * 2 ** 32) >>> 0;
  const known = a.sentinel ? ACTIONS : ACTIONS.filter((x) => x !== 'sentinel-failover');
  if (a.minReplicas && !a.sentinel) throw new Error('--min-replicas-to-write needs the replica (no --no-sentinel)');
  if (a.actions && !a.actions.length) throw new Error('--actions names no action');
  for (const x of a.actions || []) if (!known.includes(x)) throw new Error(`--actions: unknown action ${x} (${known.join(', ')})`);
  return a;
}

// ---------------------------------------------------------------- helpers

/** mulberry32: a small seeded PRNG, uniform in [0, 1). */
function rng(seed) {
  let s = seed >>> 0;
  const next = () => {
    s = (s + 0x6d2b79f5) >>> 0;
    let t = s;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  next.int = (lo, hi) => lo + Math.floor(next() * (hi - lo + 1));
  next.pick = (weights) => {
    const total = Object.values(weights).reduce((x, y) => x + y, 0);
    let r = next() * total;
    for (const [k, w] of Object.entries(weights)) if ((r -= w) < 0) return k;
    return Object.keys(weights)[0];
  };
  return next;
}

function portFree(port) {
  return new Promise((resolve) => {
    const s = net.createServer();
    s.once('error', () => resolve(false));
    s.listen(port, '127.0.0.1', () => s.close(() => resolve(true)));
  });
}

/**
 * A free port below the kernel's ephemeral range (32768..): servers that are
 * restarted on the same port must not find it taken by some client socket.
 */
const taken = new Set();
async function sparePort() {
  for (let i = 0; i < 500; i++) {
    const p = 20000 + Math.floor(Math.random() * 12000);
    if (taken.has(p)) continue;
    if (await portFree(p)) {
      taken.add(p);
      return p;
    }
  }
  throw new Error('no spare port found in 20000..32000');
}

const T0 = Date.now();
const stamp = () => {
  const s = Math.floor((Date.now() - T0) / 1000);
  return `${String(Math.floor(s / 60)).padStart(2, '0')}:${String(s % 60).padStart(2, '0')}`;
};
let logFile = null;
function log(msg) {
  const line = `[soak ${stamp()}] ${msg}`;
  console.log(line);
  if (logFile) {
    try {
      appendFileSync(logFile, line + '\n');
    } catch {
      /* folder gone */
    }
  }
}

/** Resolves after `ms`, or earlier when `signal.stopped` turns true (checked every 200 ms). */
async function sleepUnless(ms, signal) {
  const end = Date.now() + ms;
  while (!signal.stopped && Date.now() < end) await sleep(Math.min(200, end - Date.now()));
}

async function waitFor(what, pred, timeoutMs, everyMs = 250) {
  const deadline = Date.now() + timeoutMs;
  let last = null;
  for (;;) {
    try {
      const v = await pred();
      if (v) return v;
    } catch (e) {
      last = e;
    }
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}${last ? `: ${last.message}` : ''}`);
    await sleep(everyMs);
  }
}

// ---------------------------------------------------------------- infrastructure

class Infra {
  constructor(a, dir) {
    this.a = a;
    this.dir = dir;
    this.nodes = [];
    this.sentinels = [];
    this.pg = null;
    this.api = null;
    this.workers = [];
    this.workerSeq = 0;
    this.unexpectedExits = [];
    this.stopping = false;
    this.warnings = 0;
  }

  async startStores() {
    const a = this.a;
    this.pg = await privatePostgres({ port: await sparePort(), dir: path.join(this.dir, 'pg') });
    await this.pg.start();
    log(`postgres ${this.pg.port} up (${this.pg.dir})`);
    const names = a.sentinel ? ['redis-a', 'redis-b'] : ['redis-a'];
    const extra = a.minReplicas ? [`min-replicas-to-write ${a.minReplicas}`, 'min-replicas-max-lag 10'] : [];
    for (const name of names) this.nodes.push(new RedisNode({ name, port: await sparePort(), dir: path.join(this.dir, name), appendfsync: 'always', extra }));
    await this.nodes[0].start();
    if (a.sentinel) {
      await this.nodes[1].start({ replicaOf: { host: '127.0.0.1', port: this.nodes[0].port } });
      await waitFor('the replica to sync', async () => (await this.nodes[1].replication()).master_link_status === 'up', 30000);
      for (let i = 0; i < 3; i++) {
        const s = new SentinelNode({ name: `sentinel-${i + 1}`, port: await sparePort(), dir: path.join(this.dir, `sentinel-${i + 1}`), masterName: MASTER_NAME, master: { host: '127.0.0.1', port: this.nodes[0].port }, quorum: 2, downAfterMs: 1000, failoverTimeoutMs: 5000 });
        await s.start();
        this.sentinels.push(s);
      }
      // Sentinels find each other and the replica through the master (hello messages, INFO).
      await waitFor(
        'the sentinels to know each other and the replica',
        async () => {
          for (const s of this.sentinels) {
            const m = await withClient(s.port, (c) => c.call('SENTINEL', 'MASTER', MASTER_NAME));
            const f = {};
            for (let i = 0; i < m.length; i += 2) f[m[i]] = m[i + 1];
            if (Number(f['num-other-sentinels']) < 2 || Number(f['num-slaves']) < 1) return false;
          }
          return true;
        },
        30000,
      );
      log(`redis master ${this.nodes[0].port}, replica ${this.nodes[1].port}, sentinels ${this.sentinels.map((s) => s.port).join(',')} (quorum 2, down-after 1000 ms)`);
    } else {
      log(`redis ${this.nodes[0].port} (AOF, appendfsync always; no sentinel: REDIS_URL)`);
    }
  }

  /** The environment every Sluice process gets. */
  sluiceEnv() {
    const env = {
      REDIS_PREFIX: PREFIX,
      DATABASE_URL: this.pg.url('sluice_soak'),
      AUTH: 'off',
      DIAGNOSTIC_HANDLERS: 'true',
      LOG_LEVEL: 'warn',
      LOCK_TTL_MS: '3000',
      HEARTBEAT_INTERVAL_MS: '1000',
      REAPER_INTERVAL_MS: '500',
      SHUTDOWN_GRACE_MS: '5000',
      MAX_RETRIES: '10',
      WORKER_CONCURRENCY: '10',
      // Whatever the caller's environment says about these (spawn drops undefined values):
      REDIS_CLUSTER_NODES: undefined,
      OTEL_EXPORTER_OTLP_ENDPOINT: undefined,
      OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: undefined,
      SLUICE_BOOTSTRAP_ADMIN_KEY: undefined,
      METRICS_TOKEN: undefined,
      KEEP_COMPLETED_COUNT: undefined,
      KEEP_COMPLETED_MS: undefined,
      API_RATE_LIMIT_MAX: undefined,
      KEY_RATE_LIMIT_PER_SEC: undefined,
      PROJECT_MAX_WAITING: undefined,
    };
    if (this.a.sentinel) {
      env.REDIS_SENTINELS = this.sentinels.map((s) => `127.0.0.1:${s.port}`).join(',');
      env.REDIS_SENTINEL_NAME = MASTER_NAME;
      env.REDIS_URL = undefined;
    } else {
      env.REDIS_URL = `redis://127.0.0.1:${this.nodes[0].port}`;
      env.REDIS_SENTINELS = undefined;
      env.REDIS_SENTINEL_NAME = undefined;
    }
    return env;
  }

  /** Spawns one Sluice process, watches for exits nobody asked for (restarts it after 1 s). */
  async spawn(name, role, port) {
    const logPath = path.join(this.dir, `${name}.log`);
    const server = startServer({
      port,
      env: { ...this.sluiceEnv(), ROLE: role },
      quiet: false,
      onLog: (line) => {
        this.warnings++;
        try {
          appendFileSync(logPath, line + '\n');
        } catch {
          /* folder gone */
        }
      },
    });
    const entry = { name, role, server, expectedExit: false, startedAt: Date.now() };
    server.exited.then((code) => {
      if (entry.expectedExit || this.stopping) return;
      const tail = server.output().slice(-1500);
      this.unexpectedExits.push({ at: stamp(), name, code, signal: server.proc.signalCode, tail });
      log(`!! ${name} exited by itself (code ${code}, signal ${server.proc.signalCode}); last output:\n${tail}`);
      setTimeout(() => {
        if (this.stopping) return;
        this.respawn(entry).catch((e) => log(`!! restart of ${name} failed: ${e.message}`));
      }, 1000);
    });
    return entry;
  }

  async respawn(entry) {
    if (entry.role.includes('api')) {
      this.api = await this.spawn('api', entry.role, this.apiPort);
      await waitReady(this.api.server, 120000);
    } else {
      this.workers = this.workers.filter((w) => w !== entry);
      await this.startWorker();
    }
    log(`${entry.name} restarted`);
  }

  async startSluice() {
    this.apiPort = await sparePort();
    this.api = await this.spawn('api', 'api,audit,scheduler', this.apiPort);
    await waitReady(this.api.server, 120000);
    log(`sluice api,audit,scheduler at ${this.api.server.url}`);
    await Promise.all(Array.from({ length: this.a.workers }, () => this.startWorker()));
    log(`${this.workers.length} workers up (${this.workers.map((w) => w.name).join(', ')}), concurrency 10 each`);
  }

  async startWorker() {
    const name = `worker-${++this.workerSeq}`;
    const w = await this.spawn(name, 'worker', await sparePort());
    this.workers.push(w);
    await waitReady(w.server, 120000);
    return w;
  }

  /** The data node that is master now: through the sentinels (majority), else the only node. */
  async master() {
    if (!this.a.sentinel) return this.nodes[0];
    const addrs = await Promise.all(this.sentinels.map((s) => s.masterAddr()));
    const votes = new Map();
    for (const m of addrs) if (m) votes.set(m.port, (votes.get(m.port) || 0) + 1);
    const [port, n] = [...votes.entries()].sort((x, y) => y[1] - x[1])[0] || [];
    if (!port || n < 2) return null;
    return this.nodes.find((x) => x.port === port) || null;
  }

  /** True when Redis is as it should be: every node up, and (sentinels) the sentinels' master is master, the other its synced replica. */
  async redisHealthy() {
    if (this.nodes.some((n) => !n.running)) return false;
    const m = await this.master();
    if (!m) return false;
    const info = await m.replication();
    if (info.role !== 'master') return false;
    if (!this.a.sentinel) return true;
    for (const n of this.nodes) {
      if (n === m) continue;
      const r = await n.replication();
      if (r.role !== 'slave' || r.master_link_status !== 'up' || Number(r.master_port) !== m.port) return false;
    }
    // And the sentinels see the replica as such (they learn it from INFO every 10 s at most).
    return true;
  }

  async waitHealthy(timeoutMs = 90000) {
    await waitFor('redis to be healthy', () => this.redisHealthy(), timeoutMs);
    await waitFor('postgres to answer', () => this.pg.running(), timeoutMs);
    await waitFor(
      'every sluice process to be ready',
      async () => {
        for (const p of [this.api, ...this.workers]) {
          const r = await request('GET', p.server.url + '/readyz', undefined, { timeoutMs: 2000 });
          if (r.status !== 200) return false;
        }
        return true;
      },
      timeoutMs,
    );
  }

  /** Runs `fn(client)` on the current master (a fresh connection). */
  async onMaster(fn) {
    const m = await this.master();
    if (!m) throw new Error('no master');
    return withClient(m.port, fn);
  }

  /** Stops everything; `keep`: PostgreSQL is stopped, not removed (its data stays for a look). */
  async stopAll(keep = false) {
    this.stopping = true;
    const procs = [this.api, ...this.workers].filter(Boolean);
    for (const p of procs) p.expectedExit = true;
    await Promise.all(procs.map((p) => p.server.stop(10000).catch(() => undefined)));
    await Promise.all([...this.sentinels, ...this.nodes].map((n) => n.kill().catch(() => undefined)));
    if (this.pg) await (keep ? this.pg.stop('fast') : this.pg.destroy()).catch(() => undefined);
  }
}

// ---------------------------------------------------------------- workload

/** One job body of a seeded kind. */
function makeJob(r, n, runId) {
  const kind = r.pick({ sleep: 50, long: 12, delayed: 10, prio: 15, flaky: 8, doomed: 5 });
  const queue = r() < 0.7 ? QUEUES[0] : QUEUES[1];
  const body = { queue, idempotencyKey: `soak-${runId}-${n}`, maxAttempts: 10 };
  const short = () => Math.round(10 * Math.pow(30, r())); // 10..300 ms, log-uniform
  switch (kind) {
    case 'sleep':
      Object.assign(body, { type: 'diag.sleep', payload: { ms: short(), n } });
      break;
    case 'long':
      Object.assign(body, { type: 'diag.sleep', payload: { ms: r.int(1000, 5000), n } });
      break;
    case 'delayed':
      Object.assign(body, { type: 'diag.sleep', payload: { ms: r.int(20, 200), n }, delayMs: r.int(1000, 30000) });
      break;
    case 'prio':
      Object.assign(body, { type: 'diag.sleep', payload: { ms: short(), n }, priority: [-50, -10, 5, 10, 50, 'high', 'low'][r.int(0, 6)] });
      break;
    case 'flaky':
      Object.assign(body, { type: 'diag.fail', payload: { times: 1, message: 'soak: fails once', n }, backoff: { type: 'fixed', delayMs: 300, jitter: 'none' } });
      break;
    case 'doomed':
      Object.assign(body, { type: 'diag.fail', payload: { message: 'soak: always fails', n }, maxAttempts: 2, backoff: { type: 'fixed', delayMs: 200, jitter: 'none' } });
      break;
  }
  return { kind, n, body };
}

class Workload {
  constructor(a, apiUrl) {
    this.a = a;
    this.apiUrl = apiUrl;
    this.r = rng(a.seed ^ 0x9e3779b9);
    this.runId = `${a.seed.toString(36)}${Date.now().toString(36)}`;
    this.jobs = new Map(); // id -> {kind, n, queue, acceptedAt}
    this.issued = 0;
    this.inflight = new Set();
    this.requests = { sent: 0, retried: 0, needingRetry: 0, gaveUp: 0, gaveUpJobs: 0, rejected: 0, replayed: 0, causes: {}, samples: {} };
    this.rejections = [];
    this.signal = { stopped: false };
  }

  async run(durationMs) {
    const start = Date.now();
    while (!this.signal.stopped && Date.now() - start < durationMs) {
      const due = Math.floor(((Date.now() - start) / 1000) * this.a.rate) - this.issued;
      // Bounded in-flight: during an outage requests pile up retrying; don't add more.
      let budget = due;
      while (budget > 0 && this.inflight.size < 64) {
        const size = this.r() < 0.2 ? Math.min(budget, this.r.int(2, 20)) : 1;
        const jobs = Array.from({ length: size }, () => makeJob(this.r, ++this.issued, this.runId));
        budget -= size;
        const p = this.send(jobs).finally(() => this.inflight.delete(p));
        this.inflight.add(p);
      }
      await sleep(100);
    }
  }

  /** Sends one request (one job → POST /jobs, more → /jobs/batch) until accepted, for up to 3 min. */
  async send(jobs) {
    const batch = jobs.length > 1;
    const route = batch ? '/jobs/batch' : '/jobs';
    const body = batch ? { jobs: jobs.map((j) => j.body) } : jobs[0].body;
    const deadline = Date.now() + 180000;
    for (let attempt = 0; ; attempt++) {
      if (attempt === 1) this.requests.needingRetry++;
      if (attempt > 0) this.requests.retried++;
      this.requests.sent++;
      let cause;
      try {
        const res = await request('POST', this.apiUrl + route, body, { timeoutMs: 10000 });
        if (res.status === 200 || res.status === 201) {
          const got = batch ? res.body.jobs : [res.body];
          if (res.headers.get('idempotent-replayed') === 'true') this.requests.replayed++;
          got.forEach((j, i) => {
            if (!this.jobs.has(j.id)) this.jobs.set(j.id, { kind: jobs[i].kind, n: jobs[i].n, queue: jobs[i].body.queue, acceptedAt: Date.now() });
          });
          return;
        }
        if (![408, 429, 500, 502, 503, 504].includes(res.status)) {
          this.requests.rejected++;
          if (this.rejections.length < 20) this.rejections.push({ status: res.status, body: res.body, n: jobs.map((j) => j.n) });
          log(`!! request refused with ${res.status}: ${JSON.stringify(res.body).slice(0, 300)}`);
          return;
        }
        cause = String(res.status);
        const seen = (this.requests.samples[cause] ||= []);
        const text = JSON.stringify(res.body).slice(0, 300);
        if (seen.length < 3 && !seen.includes(text)) seen.push(text);
      } catch (e) {
        cause = e.name === 'TimeoutError' ? 'timeout' : 'network';
      }
      this.requests.causes[cause] = (this.requests.causes[cause] || 0) + 1;
      if (Date.now() > deadline) {
        this.requests.gaveUp++;
        this.requests.gaveUpJobs += jobs.length;
        log(`!! gave up on a request of ${jobs.length} job(s) after 3 min (last: ${cause})`);
        return;
      }
      await sleep(Math.min(2000, 100 * 2 ** Math.min(attempt, 5)) * (0.5 + Math.random() / 2));
    }
  }

  async settle() {
    while (this.inflight.size) await Promise.allSettled([...this.inflight]);
  }
}

// ---------------------------------------------------------------- chaos

class Chaos {
  constructor(a, infra) {
    this.a = a;
    this.infra = infra;
    this.r = rng(a.seed ^ 0x85ebca6b);
    this.actions = [];
    this.signal = { stopped: false };
    this.weights = a.sentinel
      ? { 'worker-kill': 3, 'redis-restart': 2, 'redis-kill': 2, 'sentinel-failover': 1, 'pg-restart': 2 }
      : { 'worker-kill': 3, 'redis-restart': 2, 'redis-kill': 2, 'pg-restart': 2 };
    if (a.actions) this.weights = Object.fromEntries(Object.entries(this.weights).filter(([k]) => a.actions.includes(k)));
  }

  async run() {
    while (!this.signal.stopped) {
      const waitMs = Math.round((this.a.chaosMin + this.r() * (this.a.chaosMax - this.a.chaosMin)) * 1000);
      await sleepUnless(waitMs, this.signal);
      if (this.signal.stopped) break;
      const kind = this.r.pick(this.weights);
      const rec = { n: this.actions.length + 1, at: stamp(), atMs: Date.now(), kind, detail: '', ms: 0, ok: true };
      this.actions.push(rec);
      const t = Date.now();
      try {
        rec.detail = await this[kind.replace(/-(\w)/g, (_, c) => c.toUpperCase())]();
      } catch (e) {
        rec.ok = false;
        rec.detail += ` FAILED: ${e.message}`;
      }
      rec.ms = Date.now() - t;
      log(`CHAOS #${rec.n} ${kind}: ${rec.detail} (${rec.ms} ms)`);
      try {
        const h = Date.now();
        await this.infra.waitHealthy(120000);
        rec.healthyAfterMs = Date.now() - t;
        if (Date.now() - h > 2000) log(`   healthy again ${((Date.now() - t) / 1000).toFixed(1)} s after the action began`);
      } catch (e) {
        rec.ok = false;
        rec.unhealthy = e.message;
        log(`!! not healthy after chaos #${rec.n}: ${e.message}`);
      }
    }
  }

  async workerKill() {
    const inf = this.infra;
    const w = inf.workers[this.r.int(0, inf.workers.length - 1)];
    w.expectedExit = true;
    w.server.proc.kill('SIGKILL');
    await w.server.exited;
    inf.workers = inf.workers.filter((x) => x !== w);
    const n = await inf.startWorker();
    return `SIGKILL ${w.name} (pid ${w.server.proc.pid}), started ${n.name}`;
  }

  async redisRestart() {
    const m = await this.infra.master();
    if (!m) throw new Error('no master to restart');
    const t = Date.now();
    await m.stop('SIGTERM');
    const down = Date.now() - t;
    await m.start();
    const after = this.a.sentinel ? await waitFor('a master', () => this.infra.master(), 30000) : m;
    return `SIGTERM master ${m.name}:${m.port} (shutdown ${down} ms), started again from its AOF${after !== m ? `; sentinels failed over to ${after.name} meanwhile` : ''}`;
  }

  async redisKill() {
    const m = await this.infra.master();
    if (!m) throw new Error('no master to kill');
    await m.kill();
    if (!this.a.sentinel) {
      await m.start();
      return `SIGKILL master ${m.name}:${m.port}, started again from its AOF`;
    }
    const t = Date.now();
    const next = await waitFor('the sentinels to fail over', async () => {
      const x = await this.infra.master();
      return x && x !== m ? x : null;
    }, 60000, 100);
    const failoverMs = Date.now() - t;
    await m.start({ replicaOf: { host: '127.0.0.1', port: next.port } });
    return `SIGKILL master ${m.name}:${m.port}; sentinels promoted ${next.name}:${next.port} after ${failoverMs} ms; ${m.name} back as its replica`;
  }

  async sentinelFailover() {
    const m = await this.infra.master();
    if (!m) throw new Error('no master');
    const s = this.infra.sentinels[this.r.int(0, this.infra.sentinels.length - 1)];
    const t = Date.now();
    await s.failover();
    const next = await waitFor('the failover', async () => {
      const x = await this.infra.master();
      return x && x !== m ? x : null;
    }, 60000, 100);
    return `SENTINEL FAILOVER via ${s.name}: ${m.name} → ${next.name}:${next.port} in ${Date.now() - t} ms`;
  }

  async pgRestart() {
    const pause = this.r.int(500, 5000);
    await this.infra.pg.stop('immediate');
    await sleep(pause);
    await this.infra.pg.start();
    return `pg_ctl stop -m immediate, ${pause} ms down, start`;
  }
}

// ---------------------------------------------------------------- progress and verdict

async function pgQuery(infra, sql, params) {
  const c = new Client({ connectionString: infra.pg.url('sluice_soak'), connectionTimeoutMillis: 2000, statement_timeout: 10000 });
  c.on('error', () => undefined);
  try {
    await c.connect();
    return await c.query(sql, params);
  } finally {
    await c.end().catch(() => undefined);
  }
}

async function progress(infra, workload, chaos) {
  let pgPart;
  try {
    const { rows } = await pgQuery(infra, 'SELECT status, count(*)::int AS n FROM jobs GROUP BY status ORDER BY status');
    pgPart = rows.map((r) => `${r.status} ${r.n}`).join(', ') || 'no jobs yet';
  } catch {
    pgPart = 'postgres down';
  }
  let redisPart;
  try {
    const m = await infra.master();
    const lens = await infra.onMaster((c) => Promise.all(QUEUES.map((q) => c.xlen(`${PREFIX}:{${q}}:events`))));
    redisPart = `master ${m.name}, unmirrored events ${lens.reduce((x, y) => x + y, 0)}`;
  } catch {
    redisPart = 'redis: no master';
  }
  const r = workload.requests;
  log(`accepted ${workload.jobs.size}, in flight ${workload.inflight.size} req, retried ${r.retried}; db: ${pgPart}; ${redisPart}; chaos ${chaos.actions.length}; workers ${infra.workers.length}`);
}

/** Per queue: stream length, the consumer group's pending entries (XPENDING summary) and the first entries' headers. */
async function streamState(infra) {
  return infra.onMaster((c) =>
    Promise.all(
      QUEUES.map(async (q) => {
        const key = `${PREFIX}:{${q}}:events`;
        const length = await c.xlen(key);
        let pending = null;
        try {
          const [count, minId, maxId, consumers] = await c.xpending(key, 'sluice-audit');
          pending = { count, minId, maxId, consumers };
        } catch {
          /* no group yet */
        }
        const first = (await c.xrange(key, '-', '+', 'COUNT', 10)).map(([id, f]) => `${id} ${f[1]}`);
        return { queue: q, length, pending, first };
      }),
    ),
  );
}

/** The job hash's state (`s`) in Redis, or 'absent'. */
async function redisState(infra, queue, id) {
  return infra.onMaster(async (c) => (await c.hget(`${PREFIX}:{${queue}}:job:${id}`, 's')) ?? 'absent');
}

/**
 * Waits until every accepted job is terminal in PostgreSQL and the events
 * streams are empty (everything mirrored), at most `timeoutMs`. Gives up
 * early when nothing moved for 60 s and none of the jobs still open exists in
 * Redis any more (they can never finish: lost).
 */
async function drain(infra, jobs, timeoutMs) {
  const ids = [...jobs.keys()];
  const deadline = Date.now() + timeoutMs;
  let last = '';
  let lastPrint = 0;
  let lastChange = Date.now();
  let prevKey = '';
  for (;;) {
    let terminal = -1;
    let byStatus = {};
    try {
      const { rows } = await pgQuery(infra, 'SELECT status, count(*)::int AS n FROM jobs WHERE id = ANY($1::uuid[]) GROUP BY status', [ids]);
      byStatus = Object.fromEntries(rows.map((r) => [r.status, r.n]));
      terminal = (byStatus.completed || 0) + (byStatus.failed || 0) + (byStatus.cancelled || 0);
    } catch (e) {
      last = `postgres: ${e.message}`;
    }
    let unmirrored = -1;
    try {
      const lens = await infra.onMaster((c) => Promise.all(QUEUES.map((q) => c.xlen(`${PREFIX}:{${q}}:events`))));
      unmirrored = lens.reduce((x, y) => x + y, 0);
    } catch (e) {
      last = `redis: ${e.message}`;
    }
    const missing = ids.length - Object.values(byStatus).reduce((x, y) => x + y, 0);
    const state = { terminal, of: ids.length, byStatus, notInDb: missing, unmirrored };
    if (terminal === ids.length && unmirrored === 0) return { drained: true, state };
    if (Date.now() > deadline) return { drained: false, state, last, why: `timeout (${timeoutMs / 1000} s)` };
    const key = `${terminal}/${unmirrored}`;
    if (key !== prevKey) [prevKey, lastChange] = [key, Date.now()];
    if (Date.now() - lastChange > 60000 && terminal >= 0 && unmirrored >= 0) {
      // Stuck: do the open jobs still exist in Redis? If none does, waiting is pointless.
      try {
        const { rows } = await pgQuery(infra, `SELECT id::text AS id FROM jobs WHERE id = ANY($1::uuid[]) AND status NOT IN ('completed', 'failed', 'cancelled')`, [ids]);
        const seen = new Set((await pgQuery(infra, 'SELECT id::text AS id FROM jobs WHERE id = ANY($1::uuid[])', [ids])).rows.map((r) => r.id));
        const open = rows.map((r) => r.id).concat(ids.filter((id) => !seen.has(id)));
        const live = [];
        for (const id of open.slice(0, 500)) if ((await redisState(infra, jobs.get(id).queue, id)) !== 'absent') live.push(id);
        if (!live.length) return { drained: false, state, why: `nothing moved for 60 s and none of the ${open.length} open jobs exists in Redis` };
      } catch (e) {
        last = e.message;
      }
      lastChange = Date.now();
    }
    if (Date.now() - lastPrint > 5000) {
      lastPrint = Date.now();
      log(`drain: ${terminal}/${ids.length} terminal ${JSON.stringify(byStatus)}, not in db ${missing}, unmirrored events ${unmirrored}`);
    }
    await sleep(1000);
  }
}

/** Times a few history reads (they wait up to 2 s for the mirror: a stuck stream shows here). */
async function historyReads(apiUrl, someId) {
  const time = async (p) => {
    const t = Date.now();
    const r = await request('GET', apiUrl + p, undefined, { timeoutMs: 15000 }).catch((e) => ({ status: e.message }));
    return { path: p, status: r.status, ms: Date.now() - t };
  };
  const out = [];
  for (const q of QUEUES) out.push(await time(`/jobs?queue=${q}&limit=1`));
  if (someId) out.push(await time(`/jobs/${someId}/events`));
  out.push(await time('/dashboard/stats'));
  return out;
}

/** The chaos action most likely behind something seen at `tMs`: the last one begun before it (within 60 s). */
function nearChaos(chaos, tMs) {
  let best = null;
  for (const c of chaos.actions) if (c.atMs <= tMs + 1000 && tMs - c.atMs < 60000) best = c;
  return best ? `#${best.n} ${best.kind} @${best.at}` : null;
}

async function verdict(infra, workload, chaos, drained) {
  const ids = [...workload.jobs.keys()];
  const pg = new Client({ connectionString: infra.pg.url('sluice_soak') });
  await pg.connect();
  let hist;
  let orphans;
  try {
    hist = await loadHistory(pg, ids);
    // Jobs the database holds that no accepted answer named (a request whose
    // answer was lost and whose retry made another job): shown, not judged.
    orphans = (await pg.query(`SELECT status, count(*)::int AS n FROM jobs WHERE NOT (id = ANY($1::uuid[])) GROUP BY status`, [ids])).rows;
  } finally {
    await pg.end();
  }
  const f = {
    accepted: ids.length,
    completed: 0,
    deadLettered: 0,
    deadLetteredAsExpected: 0,
    lost: [],
    unexpected: [],
    rerunWithStalled: 0,
    rerunAfterFailure: 0,
    duplicatesWithoutStalled: [],
    completedTwiceAfterStall: [],
    unexplainedReruns: [],
    historyProblems: [],
  };
  const latencies = [];
  const samples = [];
  for (const id of ids) {
    const meta = workload.jobs.get(id);
    const row = hist.rows.get(id);
    const events = hist.events.get(id) || [];
    const v = judgeJob(meta, row, events, hist.executions.get(id) || []);
    const show = () => ({ id, kind: meta.kind, n: meta.n, queue: meta.queue, status: v.status, chaos: nearChaos(chaos, events.length ? events[events.length - 1].at_ms : meta.acceptedAt), trail: trail(events, T0) });
    if (v.status === 'completed') f.completed++;
    if (v.status === 'failed') {
      f.deadLettered++;
      if (meta.kind === 'doomed') f.deadLetteredAsExpected++;
    }
    if (v.lost) f.lost.push({ ...show(), why: v.lost });
    else if (v.unexpected) f.unexpected.push({ ...show(), why: v.unexpected });
    if (v.claims > 1 && v.stalled > 0) f.rerunWithStalled++;
    else if (v.claims > 1) f.rerunAfterFailure++;
    if (v.duplicate === 'without_stall') f.duplicatesWithoutStalled.push(show());
    if (v.duplicate === 'after_stall') f.completedTwiceAfterStall.push(show());
    if (v.unexplainedRerun) f.unexplainedReruns.push(show());
    if (v.history.length) f.historyProblems.push({ ...show(), problems: v.history });
    if (v.status === 'completed' && row.finished_ms != null) latencies.push(row.finished_ms - Math.max(row.created_ms, row.run_ms));
    if (v.claims > 1 && v.stalled > 0 && samples.length < 3) samples.push(show());
  }
  latencies.sort((x, y) => x - y);
  // Where the lost jobs are in Redis now (absent: Redis lost them; else their state there).
  for (const l of f.lost.slice(0, 50)) l.redis = await redisState(infra, l.queue, l.id).catch((e) => `? ${e.message}`);
  const round = (x) => (x == null ? null : Math.round(x));
  const checks = {
    lost: f.lost.length === 0,
    deadLetteredOnlyAsExpected: f.unexpected.length === 0,
    completedOnce: f.duplicatesWithoutStalled.length === 0 && f.completedTwiceAfterStall.length === 0,
    noDuplicateWithoutStalled: f.duplicatesWithoutStalled.length === 0 && f.unexplainedReruns.length === 0,
    historyWhole: f.historyProblems.length === 0 && hist.quarantined === 0 && drained.drained,
    somethingAccepted: ids.length > 0,
  };
  const byKind = {};
  for (const { kind } of workload.jobs.values()) byKind[kind] = (byKind[kind] || 0) + 1;
  const chaosByKind = {};
  for (const c of chaos.actions) chaosByKind[c.kind] = (chaosByKind[c.kind] || 0) + 1;
  const cap = (l) => l.slice(0, 20);
  return {
    ok: Object.values(checks).every(Boolean),
    checks,
    seed: workload.a.seed,
    minutes: workload.a.minutes,
    rate: workload.a.rate,
    sentinel: workload.a.sentinel,
    minReplicasToWrite: workload.a.minReplicas,
    accepted: f.accepted,
    byKind,
    completed: f.completed,
    deadLettered: f.deadLettered,
    deadLetteredAsExpected: f.deadLetteredAsExpected,
    rerunWithStalled: f.rerunWithStalled,
    rerunAfterFailure: f.rerunAfterFailure,
    duplicatesWithoutStalled: f.duplicatesWithoutStalled.length,
    completedTwiceAfterStall: f.completedTwiceAfterStall.length,
    unexplainedReruns: f.unexplainedReruns.length,
    lost: f.lost.length,
    unexpectedOutcome: f.unexpected.length,
    historyProblems: f.historyProblems.length,
    quarantined: hist.quarantined,
    drained: drained.drained,
    drainState: drained.state,
    drainStop: drained.why ?? null,
    streams: drained.streams,
    historyReads: drained.historyReads,
    unacceptedJobsInDb: orphans,
    latencyMs: { p50: round(percentile(latencies, 50)), p99: round(percentile(latencies, 99)), max: round(latencies[latencies.length - 1]), n: latencies.length, note: 'finished_at − max(created_at, run_at), completed jobs (includes handler time and retry backoff)' },
    requests: workload.requests,
    rejections: workload.rejections,
    chaos: { count: chaos.actions.length, byKind: chaosByKind, failed: chaos.actions.filter((c) => !c.ok).length, log: chaos.actions.map(({ atMs, ...c }) => c) },
    unexpectedExits: infra.unexpectedExits.map(({ tail, ...e }) => e),
    sluiceWarningLines: infra.warnings,
    evidence: {
      lost: cap(f.lost),
      duplicatesWithoutStalled: cap(f.duplicatesWithoutStalled),
      completedTwiceAfterStall: cap(f.completedTwiceAfterStall),
      unexplainedReruns: cap(f.unexplainedReruns),
      unexpectedOutcome: cap(f.unexpected),
      historyProblems: cap(f.historyProblems),
      rerunWithStalledSamples: samples,
    },
  };
}

function summary(rep) {
  const yes = (b) => (b ? 'ok' : 'FAILED');
  const lines = [
    '',
    '=== soak summary ===',
    `seed ${rep.seed}, ${rep.minutes} min at ${rep.rate} jobs/s, ${rep.sentinel ? `Sentinel (1 master, 1 replica, 3 sentinels${rep.minReplicasToWrite ? `, min-replicas-to-write ${rep.minReplicasToWrite}` : ''})` : 'no Sentinel (REDIS_URL)'}`,
    `jobs accepted ${rep.accepted} (${Object.entries(rep.byKind).map(([k, v]) => `${k} ${v}`).join(', ')})`,
    `completed ${rep.completed}; dead-lettered ${rep.deadLettered} (${rep.deadLetteredAsExpected} meant to fail)`,
    `re-run after a stall (stalled event) ${rep.rerunWithStalled}; re-run after a handler failure ${rep.rerunAfterFailure}`,
    `duplicates without stalled ${rep.duplicatesWithoutStalled + rep.unexplainedReruns} (must be 0: ${rep.duplicatesWithoutStalled} completed twice, ${rep.unexplainedReruns} claimed again with no stalled/retry/release)`,
    `completed twice with a stall between ${rep.completedTwiceAfterStall} (must be 0)`,
    `lost ${rep.lost} (must be 0); unexpected outcome ${rep.unexpectedOutcome}; history problems ${rep.historyProblems}; quarantined ${rep.quarantined}; drained ${rep.drained}`,
    `chaos actions ${rep.chaos.count} (${Object.entries(rep.chaos.byKind).map(([k, v]) => `${k} ${v}`).join(', ') || 'none'})${rep.chaos.failed ? `, ${rep.chaos.failed} went wrong` : ''}`,
    `end-to-end latency p50 ${rep.latencyMs.p50} ms, p99 ${rep.latencyMs.p99} ms (max ${rep.latencyMs.max} ms)`,
    `history reads after the drain: ${(rep.historyReads || []).map((r) => `${r.path} ${r.ms} ms`).join(', ')}`,
    `requests sent ${rep.requests.sent}, retried ${rep.requests.retried} (${rep.requests.needingRetry} requests needed a retry; causes ${JSON.stringify(rep.requests.causes)}), gave up ${rep.requests.gaveUp}, refused ${rep.requests.rejected}`,
    `sluice processes that exited by themselves: ${rep.unexpectedExits.length}`,
    `checks: ${Object.entries(rep.checks).map(([k, v]) => `${k} ${yes(v)}`).join(', ')}`,
    `verdict: ${rep.ok ? 'PASS' : 'FAIL'}`,
  ];
  for (const [k, l] of Object.entries(rep.evidence)) {
    if (!l.length || k === 'rerunWithStalledSamples') continue;
    lines.push(`-- ${k} (first ${l.length}):`);
    for (const j of l) lines.push(`   ${j.id} ${j.kind} #${j.n} ${j.queue} ${j.status}${j.why ? ` (${j.why}${j.redis ? `; in Redis: ${j.redis}` : ''})` : ''}${j.problems ? ` [${j.problems.join('; ')}]` : ''}${j.chaos ? ` {after ${j.chaos}}` : ''}: ${j.trail}`);
  }
  if (!rep.drained) {
    lines.push(`-- not drained: ${rep.drainStop}`);
    for (const st of Array.isArray(rep.streams) ? rep.streams : []) if (st.length) lines.push(`   ${st.queue}: ${st.length} entries in the stream, pending ${JSON.stringify(st.pending)}; first: ${st.first.slice(0, 5).join(' | ')}`);
  }
  return lines.join('\n');
}

// ---------------------------------------------------------------- main

async function main() {
  let a;
  try {
    a = parseArgs(process.argv.slice(2));
  } catch (e) {
    console.error(`soak: ${e.message}\n${USAGE}`);
    process.exit(2);
  }
  if (a.help) return console.log(USAGE);
  const dist = path.join(ROOT, 'dist');
  if (!existsSync(path.join(dist, 'main.js'))) {
    console.error('soak: dist/main.js missing: run `npm run build` (npm run soak does)');
    process.exit(2);
  }
  if (a.sentinel && !readFileSync(path.join(dist, 'config/config.js'), 'utf8').includes('REDIS_SENTINELS')) {
    console.error('soak: this build has no Sentinel support (REDIS_SENTINELS in src/config): run with --no-sentinel');
    process.exit(2);
  }
  const dir = mkdtempSync(path.join(tmpdir(), 'sluice-soak-'));
  chmodSync(dir, 0o711); // PostgreSQL runs as `postgres` and must reach its folder inside
  logFile = path.join(dir, 'soak.log');
  const infra = new Infra(a, dir);
  let finished = false;
  const teardown = async () => {
    await infra.stopAll(a.keep);
    if (a.keep) console.log(`soak: --keep: logs and data left in ${dir} (PostgreSQL, stopped: runuser -u postgres -- pg_ctl -D ${infra.pg?.dir}/data -o "-p ${infra.pg?.port} -k ${infra.pg?.dir} -c listen_addresses=127.0.0.1" start; Redis: the AOF in redis-*/; remove the folder when done)`);
    else rmSync(dir, { recursive: true, force: true });
  };
  let interrupted = 0;
  process.on('SIGINT', () => {
    if (++interrupted > 1 || finished) process.exit(130); // exit handlers kill what is left
    log('SIGINT: stopping everything…');
    teardown().finally(() => process.exit(130));
  });
  process.on('SIGTERM', () => teardown().finally(() => process.exit(143)));

  log(`seed ${a.seed}; ${a.minutes} min at ${a.rate} jobs/s; ${a.sentinel ? 'sentinel' : 'no sentinel'}; ${a.workers} workers; chaos every ${a.chaosMin}..${a.chaosMax} s; folder ${dir}`);
  let code = 2;
  try {
    await infra.startStores();
    await infra.startSluice();
    const workload = new Workload(a, infra.api.server.url);
    const chaos = new Chaos(a, infra);
    const ticker = setInterval(() => void progress(infra, workload, chaos), 10000);
    const chaosDone = chaos.run();
    await workload.run(a.minutes * 60000);
    log(`workload stopped after ${a.minutes} min: ${workload.issued} jobs issued; finishing requests in flight…`);
    chaos.signal.stopped = true;
    await workload.settle();
    await chaosDone;
    log(`chaos stopped after ${chaos.actions.length} actions; waiting for a healthy system`);
    await infra.waitHealthy(120000).catch((e) => log(`!! ${e.message}`));
    clearInterval(ticker);
    const ids = [...workload.jobs.keys()];
    log(`draining: ${ids.length} accepted jobs (up to ${a.drainTimeout} s)`);
    const drained = await drain(infra, workload.jobs, a.drainTimeout * 1000);
    log(drained.drained ? 'drained: every accepted job is terminal and every event mirrored' : `!! not drained (${drained.why}): ${JSON.stringify(drained.state)}`);
    drained.streams = await streamState(infra).catch((e) => e.message);
    if (!drained.drained) log(`streams: ${JSON.stringify(drained.streams)}`);
    drained.historyReads = await historyReads(infra.api.server.url, ids[0]);
    log(`history reads: ${drained.historyReads.map((r) => `${r.path} ${r.status} ${r.ms} ms`).join(', ')}`);
    const rep = await verdict(infra, workload, chaos, drained);
    console.log(`SOAK ${JSON.stringify(rep)}`);
    console.log(summary(rep));
    code = rep.ok ? 0 : 1;
  } catch (e) {
    log(`soak broke: ${e.stack || e.message}`);
    code = 2;
  }
  finished = true;
  await teardown();
  process.exit(code);
}

void main();
