#!/usr/bin/env node
/*
 * `npm run load`: the load scenario of load-test.js (k6), run with autocannon
 * against a Sluice this script starts, then a zero-loss check.
 *
 *   node scripts/load.js [--n 20000] [--connections 50] [--concurrency 50]
 *                        [--single] [--drain-timeout ms] [--keep] [--auth [--key sk_...]]
 *
 * Starts two processes on a private Redis prefix and database: one with
 * ROLE=worker,scheduler,audit (WORKER_CONCURRENCY=--concurrency) and one
 * with ROLE=api (--single: one process with ROLE=all). Sends --n POST /jobs
 * over --connections keep-alive connections, keeps the id of every accepted
 * job (201), waits until every one is terminal in the history mirror, then
 * checks each against PostgreSQL (`jobs`, `dead_letter_jobs`; GET /jobs/:id
 * for stragglers): completed or in the DLQ, else lost. Prints accepted,
 * completed, failed, lost, req/s, latency p50/p99 and one `LOAD {json}` line;
 * exit 1 on any loss, on a drain timeout, or when nothing was accepted.
 *
 * The servers run with AUTH=off (they listen on loopback only), whatever
 * AUTH the caller's environment holds. --auth runs them with AUTH=on and a
 * bootstrap admin key (--key, else a random one) sent as
 * `Authorization: Bearer` on every request, to measure what key checks cost.
 */
const autocannon = require('autocannon');
const { freePort, isolation, startServer, waitReady, cleanup } = require('./lib/server');
const { client } = require('./lib/http');
const { openPg, waitSettled, account } = require('./lib/verify');
const { loadJobBody } = require('./lib/load-scenario');
const { randomBytes } = require('node:crypto');

/** API.md: a key is `sk_` + at least 32 URL-safe characters. */
const KEY_PATTERN = /^sk_[A-Za-z0-9_-]{32,}$/;

function parseArgs(argv) {
  const a = { n: 20000, connections: 50, concurrency: 50, single: false, keep: false, drainTimeout: null, auth: false, key: null };
  const int = (k, v) => {
    const x = Number(v);
    if (!Number.isInteger(x) || x < 1) throw new Error(`${k} must be a positive integer, got ${v}`);
    return x;
  };
  for (let i = 0; i < argv.length; i++) {
    const [k, inline] = argv[i].split('=', 2);
    const val = () => inline ?? argv[++i];
    if (k === '--n') a.n = int(k, val());
    else if (k === '--connections' || k === '-c') a.connections = int(k, val());
    else if (k === '--concurrency') a.concurrency = int(k, val());
    else if (k === '--drain-timeout') a.drainTimeout = int(k, val());
    else if (k === '--single') a.single = true;
    else if (k === '--keep') a.keep = true;
    else if (k === '--auth') a.auth = true;
    else if (k === '--key') {
      a.key = val();
      a.auth = true;
      if (!KEY_PATTERN.test(a.key ?? '')) throw new Error('--key must be sk_ followed by at least 32 URL-safe characters');
    }
    else if (k === '--help' || k === '-h') a.help = true;
    else throw new Error(`unknown argument ${argv[i]}`);
  }
  // Budget the drain at ≥ 2 min, or 10 ms a job for big runs on slow machines.
  a.drainTimeout ??= Math.max(120000, a.n * 10);
  if (a.auth) a.key ??= 'sk_' + randomBytes(32).toString('base64url');
  return a;
}

/** The Authorization header for `key` (none without one). */
const authHeaders = (key) => (key ? { authorization: `Bearer ${key}` } : {});

/** Runs autocannon; resolves with its result and the accepted ids. */
function fire(url, { n, connections, key }) {
  const ids = [];
  const refused = {};
  let next = 0;
  return new Promise((resolve, reject) => {
    const inst = autocannon(
      {
        url,
        connections,
        amount: n,
        timeout: 30,
        requests: [
          {
            method: 'POST',
            path: '/jobs',
            headers: { 'content-type': 'application/json', ...authHeaders(key) },
            setupRequest: (req) => ({ ...req, body: JSON.stringify(loadJobBody(next++)) }),
            onResponse: (status, body) => {
              if (status === 201) ids.push(JSON.parse(body).id);
              else refused[status] = (refused[status] || 0) + 1;
            },
          },
        ],
      },
      (err, result) => (err ? reject(err) : resolve({ result, ids, refused })),
    );
    if (process.stderr.isTTY) autocannon.track(inst, { renderResultsTable: false, outputStream: process.stderr });
  });
}

const USAGE = 'usage: node scripts/load.js [--n 20000] [--connections 50] [--concurrency 50] [--single] [--drain-timeout ms] [--keep] [--auth [--key sk_...]]';

async function main() {
  let a;
  try {
    a = parseArgs(process.argv.slice(2));
  } catch (e) {
    console.error(`load: ${e.message}\n${USAGE}`);
    process.exit(2);
  }
  if (a.help) return console.log(USAGE);
  const iso = isolation('load');
  const port = process.env.PORT ? Number(process.env.PORT) : await freePort();
  const common = { REDIS_PREFIX: iso.prefix, DATABASE_URL: iso.databaseUrl, LOG_LEVEL: 'warn', DIAGNOSTIC_HANDLERS: 'true', AUTH: a.auth ? 'on' : 'off' };
  if (a.auth) common.SLUICE_BOOTSTRAP_ADMIN_KEY = a.key;
  const procs = [];
  const stopAll = () => Promise.all(procs.map((p) => p.stop(30000)));
  process.on('SIGINT', () => void stopAll().then(() => cleanup({ ...iso, dropDb: iso.ownDb && !a.keep })).then(() => process.exit(130)));
  let code = 1;
  try {
    console.log(`load: ${a.n} jobs over ${a.connections} connections${a.auth ? ', AUTH=on (Bearer key on every request)' : ''}; prefix ${iso.prefix}, database ${new URL(iso.databaseUrl).pathname.slice(1)}`);
    if (a.single) {
      procs.push(startServer({ port, env: { ...common, ROLE: 'all', WORKER_CONCURRENCY: String(a.concurrency), LOG_LEVEL: 'info' } }));
    } else {
      // The audit role creates and migrates the database; the api's /readyz waits for that.
      const back = startServer({ port: await freePort(), env: { ...common, ROLE: 'worker,scheduler,audit', WORKER_CONCURRENCY: String(a.concurrency), LOG_LEVEL: 'info' } });
      procs.push(back);
      await waitReady(back); // every role answers /readyz
      procs.push(startServer({ port, env: { ...common, ROLE: 'api' } }));
    }
    const api = procs[procs.length - 1];
    await waitReady(api);
    console.log(`load: ${a.single ? 'ROLE=all' : 'ROLE=worker,scheduler,audit + ROLE=api'} ready at ${api.url}; firing…`);

    const t0 = Date.now();
    const { result, ids, refused } = await fire(api.url, a);
    const fireMs = Date.now() - t0;
    console.log(`load: sent ${result.requests.total} requests in ${(fireMs / 1000).toFixed(1)} s: ${ids.length} accepted, refused ${JSON.stringify(refused)}, errors ${result.errors}, timeouts ${result.timeouts}`);

    const pg = await openPg(iso.databaseUrl);
    let lastPrint = 0;
    const settled = await waitSettled(pg, ids, {
      timeoutMs: a.drainTimeout,
      intervalMs: 1000,
      onTick: (c) => {
        if (Date.now() - lastPrint < 3000) return;
        lastPrint = Date.now();
        console.log(`drain [${((Date.now() - t0) / 1000).toFixed(0)}s]: ${JSON.stringify(c)}`);
      },
    });
    const drainMs = Date.now() - t0;
    const acc = await account(pg, client(api.url, { headers: authHeaders(a.key) }), ids);
    await pg.end();
    const report = {
      requested: a.n,
      accepted: ids.length,
      refused: Object.values(refused).reduce((x, y) => x + y, 0) + result.errors + result.timeouts,
      completed: acc.completed,
      failed: acc.failed,
      lost: acc.lost.length,
      drained: settled.drained,
      reqPerSec: Math.round(result.requests.average),
      latencyMs: { p50: result.latency.p50, p99: result.latency.p99, max: result.latency.max },
      fireMs,
      drainMs,
      jobsPerSec: Math.round(ids.length / (drainMs / 1000)),
    };
    console.log('\n=== load summary ===');
    console.log(`accepted ${report.accepted}/${report.requested} (refused ${report.refused}); completed ${report.completed}, failed (DLQ) ${report.failed}, lost ${report.lost}`);
    console.log(`API: ${report.reqPerSec} req/s, latency p50 ${report.latencyMs.p50} ms, p99 ${report.latencyMs.p99} ms; end to end ${report.jobsPerSec} jobs/s (all settled in PostgreSQL after ${(drainMs / 1000).toFixed(1)} s)`);
    if (report.lost) console.log(`lost jobs, e.g.: ${JSON.stringify(acc.lostDetail.slice(0, 10))}`);
    if (!settled.drained) console.log(`not drained within ${a.drainTimeout} ms: ${JSON.stringify(settled.counts)}`);
    console.log(`LOAD ${JSON.stringify(report)}`);
    code = report.lost === 0 && report.drained && report.accepted > 0 ? 0 : 1;
  } catch (e) {
    console.error(`load failed: ${e.stack || e.message}`);
  }
  if (a.keep) {
    console.log(`--keep: servers keep running (api at ${procs[procs.length - 1]?.url}); Ctrl-C to stop`);
    return;
  }
  await stopAll();
  await cleanup({ ...iso, dropDb: iso.ownDb });
  process.exit(code);
}

void main();
