#!/usr/bin/env node
/*
 * Large bodies against a real server (issue 34; API.md v1.3: /healthz within
 * 1 s while large bodies are parsed): N concurrent POST /flows of ~S MiB each
 * (1,000 jobs, payloads of one of three shapes) while GET /healthz is polled
 * every 50 ms on fresh connections; the server's event-loop delay is
 * recorded by a preloaded monitor (./loop-delay-preload.js).
 *
 *   npm run build && node scripts/bench/bodies.js
 *   node scripts/bench/bodies.js --runs "5x12:orders,4x16:objects,16x12:orders" --rounds 2
 *   node scripts/bench/bodies.js --main /tmp/old/dist/main.js     # another build, to compare
 *   node scripts/bench/bodies.js --stages                          # only the parse stages of one body, in this process
 *
 * Shapes: `orders` (lines of {sku, qty, note}: ~96 bytes per object),
 * `objects` (tiny {k, v} objects: JSON.parse's worst case), `string` (one
 * long string per payload). Prints per run: flows answered 201 (the others
 * 503 by HTTP_ANSWER_TIMEOUT_MS), the wall time, /healthz p50 and max, the
 * server's event-loop delay max and p99, its RSS after the run.
 * ROLE=api, queues external (nothing runs the jobs); the server's Redis keys
 * and database are removed at the end.
 */
const http = require('node:http');
const path = require('node:path');
const { isolation, freePort, startServer, waitReady, cleanup } = require('../lib/server');

const args = process.argv.slice(2);
const opt = (name, def) => (args.includes(`--${name}`) ? args[args.indexOf(`--${name}`) + 1] : def);
const RUNS = opt('runs', '5x12:orders,4x16:objects,4x16:string,16x12:orders')
  .split(',')
  .map((r) => {
    const m = /^(\d+)x(\d+):(orders|objects|string)$/.exec(r);
    if (!m) throw new Error(`--runs: "${r}" is not <n>x<MiB>:<shape>`);
    return { n: Number(m[1]), mib: Number(m[2]), shape: m[3] };
  });
const ROUNDS = Number(opt('rounds', 1));
const MAIN = opt('main', undefined);
const MIB = 1_048_576;

/** A POST /flows body of 1,000 jobs, about `bytes` in all (a little under). */
function flowBody(shape, bytes) {
  const per = Math.floor(bytes / 1000) - 120;
  const line = (i) => ({ sku: `SKU-${String(i).padStart(4, '0')}`, qty: i % 7, note: 'n'.repeat(60) });
  const payload =
    shape === 'string'
      ? { s: 'x'.repeat(per) }
      : shape === 'orders'
        ? { order: 1, lines: Array.from({ length: Math.floor(per / (JSON.stringify(line(0)).length + 1)) }, (_, i) => line(i)) }
        : { o: Array.from({ length: Math.floor(per / 18) }, (_, i) => ({ k: i % 100, v: 'ab' })) };
  const jobs = Array.from({ length: 1000 }, (_, i) => ({ ref: `r${i}`, type: 't', queue: `bb${i % 3}`, payload, ...(i ? { dependsOn: ['r0'] } : {}) }));
  return Buffer.from(JSON.stringify({ jobs }));
}

function send(url, method, p, body) {
  return new Promise((resolve) => {
    const t = Date.now();
    const r = http.request(url + p, { method, agent: false, headers: body ? { 'content-type': 'application/json', 'content-length': body.length } : {} }, (res) => {
      let text = '';
      res.on('data', (c) => (text += c));
      res.on('end', () => resolve({ status: res.statusCode, ms: Date.now() - t, text }));
    });
    r.on('error', (e) => resolve({ status: e.code, ms: Date.now() - t, text: '' }));
    r.end(body);
  });
}

const pct = (a, p) => a.slice().sort((x, y) => x - y)[Math.min(a.length - 1, Math.floor((a.length * p) / 100))];

async function run(url, server, { n, mib, shape }) {
  const body = flowBody(shape, mib * MIB);
  const lat = [];
  let stop = false;
  const poll = (async () => {
    while (!stop) {
      lat.push((await send(url, 'GET', '/healthz')).ms);
      await new Promise((r) => setTimeout(r, 50));
    }
  })();
  server.proc.kill('SIGUSR2'); // the delay monitor restarts
  const t0 = Date.now();
  const out = await Promise.all(Array.from({ length: n }, () => send(url, 'POST', '/flows', body)));
  const wall = Date.now() - t0;
  stop = true;
  await poll;
  const lines = () => server.output().match(/loop delay max \d+ ms p99 \d+ ms/g) ?? [];
  const before = lines().length;
  server.proc.kill('SIGUSR2');
  while (lines().length <= before) await new Promise((r) => setTimeout(r, 50));
  const [, max, p99] = /max (\d+) ms p99 (\d+)/.exec(lines()[before]);
  const rss = Math.round(Number(require('node:fs').readFileSync(`/proc/${server.proc.pid}/status`, 'utf8').match(/VmRSS:\s+(\d+)/)[1]) / 1024);
  const ok = out.filter((o) => o.status === 201).length;
  console.log(
    `${n} × ${(body.length / MIB).toFixed(1)} MiB ${shape.padEnd(7)}: ${ok}/${n} answered 201 in ${(wall / 1000).toFixed(1)} s; ` +
      `/healthz p50 ${pct(lat, 50)} ms, max ${Math.max(...lat)} ms (${lat.length} polls); event-loop delay max ${max} ms, p99 ${p99} ms; RSS ${rss} MiB`,
  );
}

/** The parse stages of one body of each shape, in this process (medians of 5). */
function stages() {
  const { jsonDepthExceeds, findBadJsonString } = require('../../dist/core/json-guard');
  const sjson = require('secure-json-parse');
  const ms = (f) => {
    const t = process.hrtime.bigint();
    const v = f();
    return [Number(process.hrtime.bigint() - t) / 1e6, v];
  };
  for (const shape of ['string', 'orders', 'objects']) {
    const buf = flowBody(shape, 16 * MIB);
    const rows = [];
    for (let r = 0; r < 5; r++) {
      const [a, text] = ms(() => buf.toString('utf8'));
      const [b] = ms(() => jsonDepthExceeds(text));
      const [c, v] = ms(() => sjson.parse(text, { protoAction: 'error', constructorAction: 'error' }));
      const [d] = ms(() => findBadJsonString(v, text));
      rows.push([a + b, c, d]);
    }
    const med = (i) => rows.map((x) => x[i]).sort((x, y) => x - y)[2].toFixed(0);
    console.log(`${shape.padEnd(7)} ${(buf.length / MIB).toFixed(1)} MiB: decode + depth check ${med(0)} ms, JSON.parse ${med(1)} ms, string check ${med(2)} ms`);
  }
}

async function main() {
  if (args.includes('--stages')) return stages();
  const iso = isolation('bench-bodies');
  const server = startServer({
    port: await freePort(),
    env: { REDIS_PREFIX: iso.prefix, DATABASE_URL: iso.databaseUrl, ROLE: 'api', AUTH: 'off', LOG_LEVEL: 'warn', NODE_OPTIONS: `--require ${path.join(__dirname, 'loop-delay-preload.js')}` },
    quiet: true,
    ...(MAIN ? { main: path.resolve(MAIN) } : {}),
  });
  try {
    await waitReady(server);
    for (let i = 0; i < 3; i++) await send(server.url, 'PUT', `/queues/bb${i}`, Buffer.from('{"external":true}'));
    for (let round = 0; round < ROUNDS; round++) for (const r of RUNS) await run(server.url, server, r);
  } finally {
    await server.stop();
    await cleanup({ prefix: iso.prefix, databaseUrl: iso.databaseUrl, dropDb: iso.ownDb });
  }
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
