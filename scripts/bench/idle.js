#!/usr/bin/env node
/*
 * What an idle Sluice costs: a ROLE=all server with --queues empty queues and
 * nothing to do, its CPU (all threads, /proc) and Redis's (INFO cpu) and
 * commands per second (INFO commandstats) over --seconds, several rounds.
 * Redis is a redis-server of its own (no persistence), so its counters are
 * this server's only.
 *
 *   npm run build && node scripts/bench/idle.js
 *   node scripts/bench/idle.js --queues 1,10,100 --seconds 5 --rounds 3
 *   node scripts/bench/idle.js --main /tmp/old/dist/main.js     # another build, to compare
 *
 * Prints per queue count: medians (ranges) of the server's and Redis's CPU in
 * % of one core, and Redis commands/s with the three most called.
 * Needs redis-server on PATH, PostgreSQL at DATABASE_URL's server (default
 * postgres://postgres@127.0.0.1:5432/postgres; a database is created and
 * dropped per queue count), Linux /proc.
 */
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const IORedis = require('ioredis');
const { median } = require('./systems');
const { processCpu, redisCpu } = require('./proc-cpu');
const { freePort, startServer, waitReady, cleanup } = require('../lib/server');
const { client } = require('../lib/http');
const { RedisNode } = require('../lib/private-redis');

const args = process.argv.slice(2);
const opt = (name, def) => (args.includes(`--${name}`) ? args[args.indexOf(`--${name}`) + 1] : def);
const QUEUE_COUNTS = opt('queues', '3,100').split(',').map(Number);
const SECONDS = Number(opt('seconds', 5));
const ROUNDS = Number(opt('rounds', 3));
const MAIN = opt('main', undefined);
const PG_BASE = process.env.DATABASE_URL || 'postgres://postgres@127.0.0.1:5432/postgres';
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const range = (a, f) => `${f(median(a))} (${f(Math.min(...a))}–${f(Math.max(...a))})`;

/** Calls per command name from INFO commandstats. */
async function commandCalls(redis) {
  const out = {};
  for (const line of (await redis.info('commandstats')).split('\n')) {
    const m = /^cmdstat_([^:]+):calls=(\d+)/.exec(line);
    if (m) out[m[1]] = Number(m[2]);
  }
  return out;
}

async function measure(queues, redisUrl, redis) {
  const prefix = `bench-idle-${process.pid}-${queues}`;
  const dbUrl = new URL(PG_BASE);
  dbUrl.pathname = `/sluice_bench_idle_${process.pid}_${queues}`;
  const server = startServer({
    port: await freePort(),
    env: { REDIS_URL: redisUrl, REDIS_PREFIX: prefix, DATABASE_URL: dbUrl.toString(), LOG_LEVEL: 'warn', AUTH: 'off', ROLE: 'all' },
    ...(MAIN ? { main: path.resolve(MAIN) } : {}),
  });
  try {
    await waitReady(server);
    const api = client(server.url);
    for (let i = 0; i < queues; i++) {
      const r = await api.put(`/queues/idle-${i}`, {});
      if (r.status !== 200) throw new Error(`PUT /queues/idle-${i} answered ${r.status}`);
    }
    await sleep(3000); // every queue taken by the writer and the workers, startup work done
    const rows = [];
    for (let round = 0; round < ROUNDS; round++) {
      const s0 = processCpu(server.proc.pid);
      const r0 = await redisCpu(redis);
      const c0 = await commandCalls(redis);
      await sleep(SECONDS * 1000);
      const s1 = processCpu(server.proc.pid);
      const r1 = await redisCpu(redis);
      const c1 = await commandCalls(redis);
      const perSec = Object.fromEntries(Object.keys(c1).map((k) => [k, (c1[k] - (c0[k] ?? 0)) / SECONDS]));
      delete perSec.info; // this script's own INFO calls
      rows.push({ server: ((s1 - s0) / SECONDS) * 100, redis: ((r1 - r0) / SECONDS) * 100, perSec });
    }
    const total = rows.map((r) => Object.values(r.perSec).reduce((a, b) => a + b, 0));
    const last = rows[rows.length - 1].perSec;
    const top = Object.entries(last)
      .sort((a, b) => b[1] - a[1])
      .slice(0, 3)
      .map(([k, v]) => `${k} ${Math.round(v)}`)
      .join(', ');
    const pctf = (x) => `${x.toFixed(1)} %`;
    console.log(
      `| ${queues} | ${range(rows.map((r) => r.server), pctf)} | ${range(rows.map((r) => r.redis), pctf)} | ${range(total, (x) => Math.round(x).toLocaleString('en-US'))} | ${top} |`,
    );
  } finally {
    await server.stop(20000);
    await cleanup({ prefix, databaseUrl: dbUrl.toString(), dropDb: true, redisUrl });
  }
}

async function main() {
  const port = await freePort();
  const node = new RedisNode({ name: 'idle', port, dir: fs.mkdtempSync(path.join(os.tmpdir(), 'sluice-idle-redis-')), extra: ['appendonly no'] });
  await node.start();
  const redisUrl = `redis://127.0.0.1:${port}`;
  const redis = new IORedis(redisUrl);
  try {
    console.log(`# ${os.cpus().length} × ${os.cpus()[0].model}, node ${process.version}, load average ${os.loadavg().map((x) => x.toFixed(2)).join(' ')}; ${MAIN ?? 'dist/main.js'}`);
    console.log(`# idle ROLE=all server, ${ROUNDS} rounds of ${SECONDS} s per queue count; medians (ranges); CPU in % of one core`);
    console.log('| queues | server CPU | Redis CPU | Redis commands/s (ours) | most called (last round, /s) |');
    console.log('|---:|---:|---:|---:|---|');
    for (const q of QUEUE_COUNTS) await measure(q, redisUrl, redis);
  } finally {
    redis.disconnect();
    await node.stop('SIGKILL').catch(() => undefined);
    fs.rmSync(node.dir, { recursive: true, force: true });
  }
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
