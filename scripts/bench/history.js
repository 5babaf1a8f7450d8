#!/usr/bin/env node
/*
 * History at scale (issue 22): the partitioned history tables at --jobs rows
 * (default 10,000,000 over 30 days), and what an operator and the writer see.
 *
 *   npm run build && node scripts/bench/history.js                 # 10M jobs (~20-30 min on 2 cores)
 *   node scripts/bench/history.js --jobs 1000000 --rounds 5
 *   node scripts/bench/history.js --db postgres://…/sluice_explain_abc123   # reuse a kept database
 *
 * 1. Data: runs scripts/explain-queries.js with KEEP_DB=1 (JOBS=--jobs,
 *    OUT=docs/query-plans.md unless --plans-out): generate_series rows through
 *    the partitioned parents (30 day partitions + `_kept`), VACUUM ANALYZE,
 *    every history query's plan with its partition pruning written to the doc.
 * 2. GET /dashboard/recent's query for a busy project (acme), all projects
 *    and a dormant one (old, idle for 29 days): --rounds timed runs each
 *    through one pg connection (the client's wall time), median and max.
 * 3. Retiring a day while the writer runs: a mirror writer (project() +
 *    writeBatch(), the batch writer's own message, 500 fresh jobs per batch,
 *    each with its enqueued/claimed/completed events and execution)
 *    writes three windows of --window s; 1 s into the second,
 *    retireExpiredDays(retention = --retain-days, default 29: the oldest day is
 *    due) runs. Printed: the writer's jobs/s in each window (before / around
 *    the retire / after), its median and slowest batch in each, the retire's total time, its locked time (the
 *    detach transaction: what the writers may wait on), the day's jobs, and
 *    the keepers it moved.
 * The database is dropped at the end unless KEEP_DB=1 (or --db was given).
 */
const path = require('node:path');
const { spawnSync } = require('node:child_process');

const dist = (p) => require(path.resolve(__dirname, '../../dist', p));
const { createDataSource } = dist('postgres/data-source');
const { retireExpiredDays } = dist('postgres/partition-retire');
const { rangePartitions } = dist('postgres/partitions');
const { writeBatch } = dist('mirror/batch-writer');
const { project, entryFields } = dist('mirror/projection');
const { RECENT_JOBS_SQL, RECENT_LIMIT, recentJobsSql } = dist('dashboard/recent-jobs');
const { dropDatabase } = require('../lib/cleanup');
const { arg, median, v7, ENQUEUE_OPTS: OPTS } = require('../lib/bench-common');

const JOBS = Number(arg('jobs', 10_000_000));
const ROUNDS = Number(arg('rounds', 10));
const WINDOW_S = Number(arg('window', 10));
const RETAIN_DAYS = Number(arg('retain-days', 29));
const BATCH = 500;

function makeData() {
  const out = arg('plans-out', 'docs/query-plans.md');
  console.log(`generating ${JOBS.toLocaleString('en')} jobs and explaining the queries (${out}) …`);
  const r = spawnSync(process.execPath, [path.resolve(__dirname, '../explain-queries.js')], {
    env: { ...process.env, KEEP_DB: '1', JOBS: String(JOBS), OUT: out },
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  process.stdout.write(r.stdout);
  const m = /kept (\S+)/.exec(r.stdout);
  if (!m) throw new Error('explain-queries kept no database');
  return m[1];
}

let seq = 0;
/** One fresh batch: BATCH jobs enqueued, claimed and completed now (queue `emails`). */
function freshBatch() {
  const now = Date.now();
  const entries = [];
  for (let i = 0; i < BATCH; i++) {
    const id = v7(now);
    const q = 'emails';
    entries.push(
      { queue: q, id: `${now}-${seq++}`, fields: entryFields(['h', `enqueued||waiting|0|${now}|${id}|||0||${OPTS}`, 'ty', 'emails.send', 'p', '{"to":"a@example.com"}']) },
      { queue: q, id: `${now + 1}-${seq++}`, fields: entryFields(['h', `claimed|waiting|active|1|${now + 1}|${id}|1|`, 'w', 'w1']) },
      { queue: q, id: `${now + 2}-${seq++}`, fields: entryFields(['h', `completed|active|completed|1|${now + 2}|${id}|1|1`, 'w', 'w1', 'd', '{"ok":true}']) },
    );
  }
  return project(entries);
}

async function timeQueries(ds) {
  const rows = [];
  const cases = [
    ['recent, all projects', RECENT_JOBS_SQL, [RECENT_LIMIT]],
    ['recent, project acme (busy)', recentJobsSql('acme').sql, recentJobsSql('acme').params],
    ['recent, project old (dormant 29 days)', recentJobsSql('old').sql, recentJobsSql('old').params],
  ];
  for (const [name, sql, params] of cases) {
    await ds.query(sql, params);
    const t = [];
    for (let i = 0; i < ROUNDS; i++) {
      const t0 = process.hrtime.bigint();
      await ds.query(sql, params);
      t.push(Number(process.hrtime.bigint() - t0) / 1e6);
    }
    rows.push({ name, median: median(t).toFixed(1), max: Math.max(...t).toFixed(1) });
  }
  console.log('\nGET /dashboard/recent (ms, client wall time through pg, %d runs)', ROUNDS);
  for (const r of rows) console.log(`  ${r.name.padEnd(40)} median ${r.median.padStart(7)}  max ${r.max.padStart(7)}`);
  return rows;
}

async function retireUnderWrites(ds) {
  // Three windows of WINDOW_S each: before; "around" (the retire starts 1 s in and runs inside it); after.
  const windows = { before: [], around: [], after: [] };
  let phase = 'before';
  let stop = false;
  const writer = (async () => {
    while (!stop) {
      const b = freshBatch();
      const s = Date.now();
      await writeBatch(ds, b, true);
      windows[phase].push(Date.now() - s);
    }
  })();
  const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
  await sleep(WINDOW_S * 1000);
  phase = 'around';
  const aroundStart = Date.now();
  await sleep(1000);
  const parts = await rangePartitions(ds, 'jobs');
  const r0 = Date.now();
  const retired = await retireExpiredDays(ds, RETAIN_DAYS);
  const retireMs = Date.now() - r0;
  await sleep(Math.max(0, aroundStart + WINDOW_S * 1000 - Date.now()));
  phase = 'after';
  await sleep(WINDOW_S * 1000);
  stop = true;
  await writer;
  console.log(`\nRetire while the writer runs (retention ${RETAIN_DAYS} days; ${parts.length} partitions before; batches of ${BATCH} fresh jobs, 3 events + 1 execution each)`);
  for (const r of retired) console.log(`  retired ${r.suffix}: ${r.dropped.toLocaleString('en')} jobs dropped, ${r.kept} kept; parents locked ${r.lockedMs} ms`);
  console.log(`  retire total ${retireMs} ms (online keeper scan + locked detach + drop)`);
  const rates = {};
  for (const p of ['before', 'around', 'after']) {
    const lat = windows[p];
    rates[p] = Math.round((lat.length * BATCH) / WINDOW_S);
    console.log(
      `  writer ${p.padEnd(6)} (${WINDOW_S} s): ${String(rates[p]).padStart(6)} jobs/s; batches ${lat.length}, median ${median(lat)} ms, slowest ${lat.length ? Math.max(...lat) : NaN} ms`,
    );
  }
  return { retired, retireMs, rates };
}

async function main() {
  const given = arg('db', null);
  const url = given ?? makeData();
  const ds = createDataSource(url, 3);
  await ds.initialize();
  try {
    const [{ n }] = await ds.query(`SELECT sum(reltuples)::bigint AS n FROM pg_class c JOIN pg_inherits i ON i.inhrelid = c.oid WHERE i.inhparent = 'jobs'::regclass`);
    console.log(`\ndatabase ${url}: ~${Number(n).toLocaleString('en')} jobs (planner estimate)`);
    await timeQueries(ds);
    await retireUnderWrites(ds);
  } finally {
    await ds.destroy();
    if (!given && process.env.KEEP_DB !== '1') await dropDatabase(url);
    else console.log(`kept ${url}`);
  }
}

main().catch((e) => {
  console.error(e.stack || e.message);
  process.exit(1);
});
