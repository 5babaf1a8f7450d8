#!/usr/bin/env node
/*
 * HTTP benchmark: POST /jobs (enqueue only) vs GET /healthz (the no-op
 * endpoint) on a real Sluice process, alternating rounds, medians; and
 * POST /jobs with an API key on every request (a second process with
 * AUTH=on, a `producer` key), the security issue's ≤ 10 % target.
 *
 *   npm run build && npm run bench:http
 *   node scripts/bench/http.js --rounds 1 --duration 5      # quick
 *   node scripts/bench/http.js --cpu-prof /tmp/prof          # profile the server
 *   node scripts/bench/http.js --only post --rate 1000 --main /tmp/b/dist/main.js   # A/B CPU per request
 *   node scripts/bench/http.js --key-rate-limit 1000000      # the keyed server with a (never reached) token bucket per key
 *   node scripts/bench/http.js --only post --rate 1000 --traceparent          # POST /jobs with W3C traceparent/tracestate headers
 *   node scripts/bench/http.js --only post --rate 1000 --traceparent --otlp   # … and the OpenTelemetry SDK on (spans to a local sink)
 *
 * Builds nothing: run `npm run build` first (it starts dist/main.js).
 * Needs Redis at REDIS_URL and PostgreSQL at DATABASE_URL's server (a
 * database of its own is created and dropped; keys live under their own
 * REDIS_PREFIX and are deleted after every POST round and at the end).
 *
 * The server runs ROLE=api (no worker: only enqueue is measured),
 * LOG_LEVEL=warn, DIAGNOSTIC_HANDLERS=true (POST /jobs uses type diag.echo).
 * The load generator (autocannon, programmatic) runs in a child process of
 * its own, so it does not share an event loop with this orchestrator; on 2
 * cores it still competes with the server and Redis for CPU, which lowers
 * both endpoints alike (the ratio is the steadier figure).
 */
const { spawn } = require('node:child_process');
const fs = require('node:fs');
const net = require('node:net');
const os = require('node:os');
const path = require('node:path');
const { deletePrefix, dropDatabase } = require('../lib/cleanup');
const { run: runAutocannon } = require('./autocannon-run');
const { processCpu } = require('./proc-cpu');

const args = process.argv.slice(2);
const opt = (name, def) => {
  const i = args.indexOf(`--${name}`);
  return i >= 0 ? args[i + 1] : def;
};
/** `--main <file>`: another build to measure (A/B comparisons); default dist/main.js. */
const MAIN = path.resolve(opt('main', path.resolve(__dirname, '../../dist/main.js')));

const ROUNDS = Number(opt('rounds', 3));
const DURATION = Number(opt('duration', 10));
const CONNECTIONS = Number(opt('connections', 50));
const CPU_PROF = opt('cpu-prof', null);
/** `--rate N`: fixed total request rate (autocannon overallRate) instead of open throttle, for CPU/request A/B runs. */
const RATE = opt('rate', null);
/** `--only post` or `--only noop`: measure one endpoint (e.g. while profiling). */
const ONLY = opt('only', null);
const REDIS_URL = process.env.REDIS_URL || 'redis://127.0.0.1:6379';
const PG_BASE = process.env.DATABASE_URL || 'postgres://postgres@127.0.0.1:5432/postgres';
const BODY = JSON.stringify({ type: 'diag.echo', payload: { to: 'user@example.com', n: 42 } });
/** `--traceparent`: plain POST /jobs requests carry W3C trace context headers (the job stores them). */
const POST_HEADERS = args.includes('--traceparent')
  ? { 'content-type': 'application/json', traceparent: '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01', tracestate: 'rojo=00f067aa0ba902b7' }
  : { 'content-type': 'application/json' };
/** `--otlp`: the plain server runs the OpenTelemetry SDK, exporting to a local OTLP/HTTP sink that answers 200. */
const OTLP = args.includes('--otlp');

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};
const fmt = (x) => Math.round(x).toLocaleString('en-US');
const verdictOf = (ok) => (ok ? 'met' : 'NOT met');

function freePort() {
  return new Promise((res, rej) => {
    const s = net.createServer();
    s.once('error', rej);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address();
      s.close(() => res(port));
    });
  });
}

/** One autocannon run in a child process (./autocannon-run.js); resolves with its summary. */
function measure(url, title, extra) {
  return runAutocannon({ url, title, connections: CONNECTIONS, duration: DURATION, ...(RATE ? { overallRate: Number(RATE) } : {}), ...extra });
}

/** Runs `measure` and adds the server's CPU time per request (µs): steadier than req/s on a shared machine. */
async function measureWithCpu(pid, url, title, extra) {
  const c0 = processCpu(pid);
  const r = await measure(url, title, extra);
  r.cpuUs = ((processCpu(pid) - c0) * 1e6) / Math.max(1, r.total);
  return r;
}


async function waitReady(url, server, deadlineMs = 60_000) {
  const t0 = Date.now();
  for (;;) {
    if (server.exitCode !== null) throw new Error(`sluice exited with ${server.exitCode}`);
    try {
      const r = await fetch(`${url}/readyz`);
      if (r.status === 200) return;
    } catch {
      /* not listening yet */
    }
    if (Date.now() - t0 > deadlineMs) throw new Error('sluice not ready within 60 s');
    await sleep(200);
  }
}

async function main() {
  if (!fs.existsSync(MAIN)) throw new Error(`${MAIN} missing: run npm run build first`);
  const IORedis = require('ioredis');
  const prefix = `bench-http-${process.pid}`;
  const dbUrl = new URL(PG_BASE);
  dbUrl.pathname = `/sluice_bench_http_${process.pid}`;
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const nodeArgs = CPU_PROF ? ['--cpu-prof', '--cpu-prof-dir', CPU_PROF] : [];
  const spawnServer = (p, extraEnv) =>
    spawn(process.execPath, [...nodeArgs, MAIN], {
      env: {
        PATH: process.env.PATH ?? '',
        NODE_ENV: 'production',
        ROLE: 'api',
        PORT: String(p),
        HOST: '127.0.0.1',
        REDIS_URL,
        REDIS_PREFIX: prefix,
        DATABASE_URL: dbUrl.toString(),
        DIAGNOSTIC_HANDLERS: 'true',
        LOG_LEVEL: 'warn',
        // Nothing mirrors the stream here (no audit role): keep load shedding out of the way.
        AUDIT_MAX_BACKLOG: '100000000',
        ...extraEnv,
      },
      stdio: ['ignore', 'inherit', 'inherit'],
    });
  let sink = null;
  if (OTLP) {
    sink = require('node:http').createServer((req, res) => req.resume().on('end', () => res.end()));
    await new Promise((r) => sink.listen(0, '127.0.0.1', r));
  }
  const server = spawnServer(port, { AUTH: 'off', ...(sink ? { OTEL_EXPORTER_OTLP_ENDPOINT: `http://127.0.0.1:${sink.address().port}` } : {}) });
  // The keyed variant: the same build with AUTH=on, measured in the same rounds.
  const keyedPort = await freePort();
  const keyedUrl = `http://127.0.0.1:${keyedPort}`;
  const bootstrap = 'sk_' + require('node:crypto').randomBytes(32).toString('base64url');
  // `--key-rate-limit N`: the keyed server limits each key to N requests/s (set it high enough never to refuse: measures the bucket's cost).
  const keyLimit = opt('key-rate-limit', '');
  const keyed = ONLY ? null : spawnServer(keyedPort, { AUTH: 'on', SLUICE_BOOTSTRAP_ADMIN_KEY: bootstrap, ...(keyLimit ? { KEY_RATE_LIMIT_PER_SEC: keyLimit } : {}) });
  const redis = new IORedis(REDIS_URL);
  const rows = [];
  try {
    await waitReady(url, server);
    let producerKey = null;
    if (keyed) {
      await waitReady(keyedUrl, keyed);
      const r = await fetch(`${keyedUrl}/keys`, { method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${bootstrap}` }, body: JSON.stringify({ name: 'bench', role: 'producer' }) });
      if (r.status !== 201) throw new Error(`POST /keys answered ${r.status}`);
      producerKey = (await r.json()).secret;
    }
    const keyedHeaders = { 'content-type': 'application/json', authorization: `Bearer ${producerKey}` };
    console.log(`# sluice ${url} (ROLE=api, pid ${server.pid}); ${CONNECTIONS} connections, ${DURATION} s per run, ${ROUNDS} rounds`);
    console.log(`# ${os.cpus().length} × ${os.cpus()[0].model}, node ${process.version}; load generator: autocannon in a child process`);
    // Warm-up (JIT, connection pools), not counted.
    if (ONLY !== 'post') await measure(`${url}/healthz`, 'warmup noop', { duration: 2 });
    if (ONLY !== 'noop') await measure(`${url}/jobs`, 'warmup post', { duration: 2, method: 'POST', headers: POST_HEADERS, body: BODY });
    if (keyed) await measure(`${keyedUrl}/jobs`, 'warmup keyed post', { duration: 2, method: 'POST', headers: keyedHeaders, body: BODY });
    await deletePrefix(redis, prefix, ':{');
    for (let round = 1; round <= ROUNDS; round++) {
      const skipped = { cpuUs: NaN, rps: NaN, p50: NaN, p99: NaN, non2xx: NaN, errors: NaN, timeouts: NaN };
      const noop = ONLY === 'post' ? skipped : await measureWithCpu(server.pid, `${url}/healthz`, 'GET /healthz', {});
      // Keyed and plain POST alternate which goes first, so neither always meets a warmer machine.
      const plainPost = () => (ONLY === 'noop' ? skipped : measureWithCpu(server.pid, `${url}/jobs`, 'POST /jobs', { method: 'POST', headers: POST_HEADERS, body: BODY }));
      const keyedPost = () => (keyed ? measureWithCpu(keyed.pid, `${keyedUrl}/jobs`, 'POST /jobs + key', { method: 'POST', headers: keyedHeaders, body: BODY }) : skipped);
      let post, withKey;
      if (round % 2) {
        post = await plainPost();
        await deletePrefix(redis, prefix, ':{');
        withKey = await keyedPost();
      } else {
        withKey = await keyedPost();
        await deletePrefix(redis, prefix, ':{');
        post = await plainPost();
      }
      await deletePrefix(redis, prefix, ':{');
      rows.push({ round, noop, post, withKey });
      for (const [name, r] of [['GET /healthz', noop], ['POST /jobs', post], ['POST +key', withKey]]) {
        console.log(
          `round ${round} ${name.padEnd(12)} ${fmt(r.rps).padStart(7)} req/s  p50 ${r.p50} ms  p99 ${r.p99} ms  non-2xx ${r.non2xx}  errors ${r.errors}  timeouts ${r.timeouts}  server CPU ${Math.round(r.cpuUs)} µs/req`,
        );
      }
    }
  } finally {
    for (const p of [server, keyed].filter(Boolean)) {
      p.kill('SIGTERM');
      await new Promise((r) => (p.exitCode !== null ? r() : p.once('exit', r)));
    }
    sink?.close();
    await deletePrefix(redis, prefix).catch(() => undefined);
    redis.disconnect();
    await dropDatabase(dbUrl.toString()).catch((e) => console.error(`drop database: ${e.message}`));
  }
  const m = (sel) => median(rows.map(sel));
  const noopRps = m((r) => r.noop.rps);
  const postRps = m((r) => r.post.rps);
  const p99 = m((r) => r.post.p99);
  console.log(`\nmedians of ${rows.length} rounds:`);
  console.log(`GET /healthz  ${fmt(noopRps)} req/s  p50 ${m((r) => r.noop.p50)} ms  p99 ${m((r) => r.noop.p99)} ms  non-2xx ${m((r) => r.noop.non2xx)}  server CPU ${Math.round(m((r) => r.noop.cpuUs))} µs/req`);
  console.log(`POST /jobs    ${fmt(postRps)} req/s  p50 ${m((r) => r.post.p50)} ms  p99 ${p99} ms  non-2xx ${m((r) => r.post.non2xx)}  server CPU ${Math.round(m((r) => r.post.cpuUs))} µs/req`);
  console.log(`ratio POST/noop ${(postRps / noopRps).toFixed(2)}`);
  if (keyed) {
    const keyRps = m((r) => r.withKey.rps);
    const ratios = rows.map((r) => r.withKey.rps / r.post.rps);
    console.log(`POST +key     ${fmt(keyRps)} req/s  p50 ${m((r) => r.withKey.p50)} ms  p99 ${m((r) => r.withKey.p99)} ms  non-2xx ${m((r) => r.withKey.non2xx)}  server CPU ${Math.round(m((r) => r.withKey.cpuUs))} µs/req`);
    console.log(`ratio keyed/plain POST: median of per-round ratios ${median(ratios).toFixed(3)} (rounds: ${ratios.map((x) => x.toFixed(3)).join(', ')}); target ≥ 0.90 ${verdictOf(median(ratios) >= 0.9)}`);
  }
  const verdict = verdictOf;
  console.log(
    `targets: POST ≥ 10,000 req/s ${verdict(postRps >= 10_000)}; ≥ 0.5× noop ${verdict(postRps >= 0.5 * noopRps)}; p99 ≤ 20 ms ${verdict(p99 <= 20)}`,
  );
  if (CPU_PROF) console.log(`server CPU profile written under ${CPU_PROF}`);
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
