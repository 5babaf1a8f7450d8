#!/usr/bin/env node
/*
 * Demo workload. Starts `node dist/main.js` (ROLE=all) and feeds it a mixed,
 * realistic workload: emails (some bounce and retry, some dead-letter),
 * image processing on a concurrency-capped queue, payment SMS at high
 * priority on the `critical` queue, delayed reminders, an idempotent
 * resubmission, and one manual dead-letter retry. Prints live progress and a
 * closing summary.
 *
 * Until the HTTP API lands, jobs are submitted with the same store the API
 * uses (src/redis/redis-job-store.ts), as an embedded client would.
 *   node scripts/demo.js [--ci] [--keep]
 */
const { spawn } = require('node:child_process');
const path = require('node:path');
const dist = path.resolve(__dirname, '../dist');
const { createRedis } = require(`${dist}/redis/connection`);
const { RedisScripts } = require(`${dist}/redis/scripts`);
const { RedisJobStore } = require(`${dist}/redis/redis-job-store`);
const { normalizeEnqueue } = require(`${dist}/core/job-options`);
const { Client } = require('pg');

const CI = process.argv.includes('--ci') || !process.stdout.isTTY;
const KEEP = process.argv.includes('--keep');
const SCALE = CI ? 0.4 : 1;
const PORT = process.env.PORT || '3000';
const PREFIX = process.env.REDIS_PREFIX || `sluice-demo-${Date.now().toString(36)}`;
const REDIS_URL = process.env.REDIS_URL || 'redis://127.0.0.1:6379';
// The demo's history goes to a database of its own (one database per Redis
// prefix: restore and the counts assume it), dropped at the end unless --keep.
const OWN_DB = !process.env.DATABASE_URL;
const DATABASE_URL = process.env.DATABASE_URL || `postgres://postgres@127.0.0.1:5432/${PREFIX.replace(/-/g, '_')}`;
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const n = (x) => Math.max(1, Math.round(x * SCALE));

let current = null;
function startServer() {
  const env = {
    ...process.env,
    ROLE: 'all',
    PORT,
    REDIS_PREFIX: PREFIX,
    DATABASE_URL,
    DIAGNOSTIC_HANDLERS: 'true',
    WORKER_CONCURRENCY: '20',
    QUEUES: 'critical,default,media',
    LOCK_TTL_MS: '10000',
    HEARTBEAT_INTERVAL_MS: '2000',
    REAPER_INTERVAL_MS: '1000',
    LOG_LEVEL: process.env.LOG_LEVEL || 'info', // logs go to a buffer; warnings and errors are echoed
    NODE_ENV: 'production',
  };
  const proc = spawn(process.execPath, [path.join(dist, 'main.js')], { env, stdio: ['ignore', 'pipe', 'inherit'] });
  let out = '';
  proc.stdout.on('data', (d) => {
    out += d;
    for (const line of String(d).split('\n')) if (/"level":(40|50|60)/.test(line)) process.stderr.write(`[sluice] ${line}\n`);
  });
  current = proc;
  return {
    proc,
    ready: (async () => {
      for (let i = 0; i < 150; i++) {
        if (/"msg":"sluice (listening|started)/.test(out)) return;
        if (proc.exitCode !== null) throw new Error(`sluice exited: ${out}`);
        await sleep(100);
      }
      throw new Error('sluice did not start within 15 s');
    })(),
    output: () => out,
  };
}

function workload() {
  const jobs = [];
  const fixed = (delayMs) => ({ type: 'fixed', delayMs, maxDelayMs: delayMs, jitter: 'none' });
  for (let i = 0; i < n(300); i++) {
    const bounce = i % 20 === 7;
    jobs.push({ type: 'send_email', queue: 'default', maxAttempts: 3, backoff: fixed(400),
      payload: { to: bounce ? `user${i}@bounce.test` : `user${i}@example.com`, subject: `Welcome #${i}`, body: 'Hello!' } });
  }
  for (let i = 0; i < n(60); i++) {
    jobs.push({ type: 'image_processing', queue: 'media', payload: { imageUrl: `https://cdn.example.com/img/${i}.jpg`, sizes: ['thumb', 'small', 'medium'] } });
  }
  for (let i = 0; i < n(100); i++) {
    const dead = i % 25 === 3;
    jobs.push({ type: 'SEND_PAYMENT_SMS', queue: 'critical', priority: 'high', maxAttempts: 2, backoff: fixed(300),
      payload: { phone: dead ? `+9990000${1000 + i}` : `+1555000${1000 + i}`, amount: 10 + i, currency: 'EUR' } });
  }
  for (let i = 0; i < n(20); i++) {
    jobs.push({ type: 'send_email', queue: 'default', delayMs: 2000 + i * 200, payload: { to: `reminder${i}@example.com`, subject: 'Your cart' } });
  }
  jobs.push({ type: 'send_email', queue: 'default', payload: { to: 'not-an-address', subject: 'x' } }); // unrecoverable
  return jobs;
}

async function main() {
  console.log(`Sluice demo: starting the server (all roles, prefix ${PREFIX})…`);
  const server = startServer();
  await server.ready;
  const redis = createRedis({ redisUrl: REDIS_URL, redisClusterNodes: null });
  const store = new RedisJobStore(redis, new RedisScripts(redis), PREFIX);
  await store.configureQueue('media', { maxConcurrency: 4 });

  const inputs = workload();
  const t0 = Date.now();
  const ids = [];
  // Submit like 20 concurrent clients would, one job per request.
  let next = 0;
  await Promise.all(Array.from({ length: 20 }, async () => {
    while (next < inputs.length) {
      const input = inputs[next++];
      const [r] = await store.enqueue([normalizeEnqueue(input, 524288)]);
      ids.push({ id: r.id, queue: input.queue });
    }
  }));
  // An idempotent resubmission: the same key twice gives the same job.
  const order = { type: 'SEND_PAYMENT_SMS', queue: 'critical', idempotencyKey: 'order-42-receipt', payload: { phone: '+15550001234', amount: 42 } };
  const [first] = await store.enqueue([normalizeEnqueue(order, 524288)]);
  const [again] = await store.enqueue([normalizeEnqueue(order, 524288)]);
  ids.push({ id: first.id, queue: 'critical' });
  console.log(`submitted ${ids.length} jobs in ${Date.now() - t0} ms; idempotent resubmission → same job: ${first.id === again.id && again.replayed}`);

  // Live jobs are read from Redis; finished ones leave Redis once the audit
  // writer has mirrored them, so those are read from PostgreSQL.
  const pg = new Client({ connectionString: DATABASE_URL });
  await pg.connect();
  const statusOf = async () => {
    const p = redis.pipeline();
    for (const j of ids) p.hget(store.keys(j.queue).base + 'job:' + j.id, 's');
    const live = (await p.exec()).map(([, s]) => s);
    const gone = ids.filter((_, i) => !live[i]).map((j) => j.id);
    const rows = gone.length ? (await pg.query('SELECT id, status FROM jobs WHERE id = ANY($1::uuid[])', [gone])).rows : [];
    const mirrored = new Map(rows.map((r) => [r.id, r.status]));
    return live.map((s, i) => s || mirrored.get(ids[i].id) || 'unknown');
  };
  const tally = (statuses) => {
    const byQueue = {};
    statuses.forEach((s, i) => {
      const q = (byQueue[ids[i].queue] ||= { waiting: 0, delayed: 0, active: 0, completed: 0, failed: 0, cancelled: 0 });
      q[s] = (q[s] || 0) + 1;
    });
    return byQueue;
  };
  const bar = (done, total, width = 24) => '█'.repeat(Math.round((done / total) * width)).padEnd(width, '░');
  let statuses;
  for (;;) {
    statuses = await statusOf();
    const byQueue = tally(statuses);
    const lines = Object.entries(byQueue).sort().map(([q, c]) => {
      c.unknown = c.unknown || 0;
      const total = Object.values(c).reduce((a, b) => a + b, 0);
      const done = c.completed + c.failed + c.cancelled;
      return `  ${q.padEnd(9)} ${bar(done, total)} ${String(done).padStart(4)}/${total}  waiting ${c.waiting} delayed ${c.delayed} active ${c.active} failed(DLQ) ${c.failed}`;
    });
    const elapsed = ((Date.now() - t0) / 1000).toFixed(1);
    if (process.stdout.isTTY && !CI) process.stdout.write(`\x1b[2J\x1b[H[${elapsed}s]\n${lines.join('\n')}\n`);
    else console.log(`[${elapsed}s]\n${lines.join('\n')}`);
    if (statuses.every((s) => ['completed', 'failed', 'cancelled'].includes(s))) break;
    if (Date.now() - t0 > 120000) throw new Error('demo workload did not finish within 120 s');
    await sleep(CI ? 1000 : 500);
  }

  // One manual dead-letter retry, with a corrected payload.
  const deadIdx = statuses.findIndex((s, i) => s === 'failed' && ids[i].queue === 'critical');
  let retried = null;
  if (deadIdx >= 0) {
    const dead = await store.getJob('critical', ids[deadIdx].id);
    console.log(`\nDLQ retry: job ${dead.id} (${dead.type}) failed after ${dead.attempts} attempts: "${dead.lastError}"`);
    await store.retryFromDlq('critical', dead.id, { ...dead.payload, phone: '+15550009999' });
    for (let i = 0; i < 100; i++) {
      retried = (await store.getJob('critical', dead.id)) ?? (await pg.query('SELECT status FROM jobs WHERE id = $1', [dead.id])).rows[0];
      if (retried?.status === 'completed') break;
      await sleep(100);
    }
    console.log(`  → retried with a corrected phone number: ${retried.status}`);
  }

  statuses = await statusOf();
  const totals = statuses.reduce((acc, s) => ((acc[s] = (acc[s] || 0) + 1), acc), {});
  const secs = (Date.now() - t0) / 1000;
  console.log('\n=== Sluice demo summary ===');
  console.log(`jobs: ${ids.length}  completed: ${totals.completed || 0}  dead-lettered: ${totals.failed || 0}  cancelled: ${totals.cancelled || 0}  in ${secs.toFixed(1)} s`);
  console.log(`health: http://127.0.0.1:${PORT}/healthz  (dashboard and /docs arrive with the HTTP API)`);
  console.log(`history: ${DATABASE_URL} (tables jobs, job_events, job_executions, dead_letter_jobs)`);
  console.log(`SUMMARY ${JSON.stringify({ jobs: ids.length, completed: totals.completed || 0, failed: totals.failed || 0, retriedFromDlq: retried ? retried.status : null, idempotentReplay: again.replayed })}`);

  redis.disconnect();
  await pg.end();
  if (KEEP) {
    console.log('server keeps running (--keep); Ctrl-C to stop');
    return;
  }
  server.proc.kill('SIGTERM');
  const code = await new Promise((r) => server.proc.on('exit', (c) => r(c)));
  console.log(`server stopped gracefully (exit code ${code})`);
  // Leave nothing behind in Redis.
  const r2 = createRedis({ redisUrl: REDIS_URL, redisClusterNodes: null });
  let cursor = '0';
  do {
    const [c, keys] = await r2.scan(cursor, 'MATCH', `${PREFIX}:*`, 'COUNT', 1000);
    cursor = c;
    if (keys.length) await r2.unlink(...keys);
  } while (cursor !== '0');
  r2.disconnect();
  if (OWN_DB) {
    const admin = new Client({ connectionString: DATABASE_URL.replace(/\/[^/]*$/, '/postgres') });
    await admin.connect();
    await admin.query(`DROP DATABASE IF EXISTS "${new URL(DATABASE_URL).pathname.slice(1)}" WITH (FORCE)`);
    await admin.end();
  }
  process.exit(code === 0 ? 0 : 1);
}

main().catch((e) => {
  console.error(e);
  current?.kill('SIGKILL');
  process.exit(1);
});
