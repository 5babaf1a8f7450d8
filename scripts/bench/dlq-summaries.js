#!/usr/bin/env node
/*
 * Failure summaries (API.md v1.3, issue 38): the time of the rules summary's
 * queries (src/history/dlq-summary.ts) per dead-letter group at JOBS history
 * rows, for docs/benchmarks.md and docs/query-plans.md.
 *
 *   npm run build && node scripts/bench/dlq-summaries.js
 * Env: JOBS (default 1000000 `jobs` rows over 7 days, 7 queues, 21 types),
 *      DLQ_ROWS (default 50000 of them dead-lettered, 200 causes whose shares fall off as 1/(k+1)),
 *      RUNS (default 20), PG_URL (server for a throwaway database, dropped at the end).
 * Prints markdown: per group (the largest, a middle one, a small one, alone) and for the
 * 100 groups of GET /jobs/dlq/groups together, median and max ms; then the three plans.
 */
const path = require('node:path');
const { performance } = require('node:perf_hooks');
const dist = (p) => require(path.resolve(__dirname, '../../dist', p));
const { openPostgres } = dist('postgres/data-source');
const { ensureDays } = dist('postgres/partitions');
const { dlqGroups } = dist('history/dlq-groups');
const { groupFacts, hourlySql, sampleSql, earlierSql } = dist('history/dlq-summary');
const { idAtMs } = dist('history/list-jobs');
const { rulesSummary } = dist('core/dlq-summary');
const { errorFingerprint } = dist('core/error-fingerprint');
const { dropDatabase } = require('../lib/cleanup');

const JOBS = Number(process.env.JOBS || 1_000_000);
const DLQ_ROWS = Number(process.env.DLQ_ROWS || 50_000);
const RUNS = Number(process.env.RUNS || 20);
const PG_URL = process.env.PG_URL || 'postgres://postgres@127.0.0.1:5432/postgres';
const QUEUES = ['default', 'emails', 'images', 'reports', 'webhooks', 'exports', 'billing'];
const DAY = 86_400_000;

const word = (k) => String.fromCharCode(97 + (k % 26)) + String.fromCharCode(97 + (Math.floor(k / 26) % 26)) + 'x';
/** Cause k's message for job n (letters name the cause: digits are normalized away). */
const cause = (k, n) =>
  [`order ${n} not found in shard ${word(k)}`, `connect ECONNREFUSED 10.0.3.${n % 250}:5432 (${word(k)})`, `upstream https://api.example.com/v1/x/${n} timed out after ${n % 5000} ms in ${word(k)}`,
    `invalid recipient "user${n}@example.com" (rule ${word(k)})`][k % 4];

async function time(fn) {
  await fn(); // warm: the first run reads the pages from disk (reported apart by the caller when it matters)
  const ms = [];
  for (let i = 0; i < RUNS; i++) {
    const t = performance.now();
    await fn();
    ms.push(performance.now() - t);
  }
  ms.sort((a, b) => a - b);
  return { median: ms[Math.floor(ms.length / 2)], max: ms[ms.length - 1] };
}
const fmt = (t, per = 1) => `${(t.median / per).toFixed(2)} | ${(t.max / per).toFixed(2)}`;

async function main() {
  const url = new URL(PG_URL);
  url.pathname = `/sluice_bench_summaries_${process.pid}`;
  const { dataSource: db } = await openPostgres(url.toString(), 4);
  try {
    const now = Date.now();
    await ensureDays(db, now - 8 * DAY, now + DAY);
    // JOBS rows over the last 7 days (UUIDv7 ids of their creation time), in chunks; every JOBS/DLQ_ROWS-th one failed.
    const every = Math.max(1, Math.floor(JOBS / DLQ_ROWS));
    const t0 = performance.now();
    for (let from = 0; from < JOBS; from += 100_000) {
      const to = Math.min(JOBS, from + 100_000) - 1;
      await db.query(
        `INSERT INTO jobs (id, queue, type, status, priority, attempts, max_attempts, backoff, timeout_ms, payload, worker_id, execution_seq,
           created_at, run_at, started_at, finished_at, updated_at, last_event_ms, last_event_seq)
         SELECT (substr(h, 1, 8) || '-' || substr(h, 9, 4) || '-7' || substr(r, 1, 3) || '-8' || substr(r, 4, 3) || '-' || substr(r, 7, 12))::uuid,
           ($2::text[])[1 + i % 7], ($2::text[])[1 + i % 7] || '.t' || (i % 3),
           CASE WHEN i % $3 = 0 THEN 'failed' ELSE 'completed' END, 0, 3, 3, 'exponential|2000|3600000|equal', 600000,
           CASE WHEN i % $3 = 0 AND i % 2 = 0 THEN '{"orderId":' || i || ',"amount":12.5,"currency":"EUR"}' ELSE '{"orderId":' || i || ',"amount":12.5}' END,
           'w-' || (i % 12), 3, to_timestamp(ms / 1000.0), to_timestamp(ms / 1000.0), to_timestamp(ms / 1000.0), to_timestamp(ms / 1000.0 + 0.05),
           to_timestamp(ms / 1000.0 + 0.05), ms, i
         FROM (SELECT i, ($1::bigint - (i * 604800000::bigint / ${JOBS})) AS ms, md5(i::text) AS r FROM generate_series(${from}, ${to}) i) s,
           LATERAL (SELECT lpad(to_hex(ms), 12, '0') AS h) x`,
        [now, QUEUES, every],
      );
    }
    // The failed ones into the DLQ, 200 causes.
    const weights = Array.from({ length: 200 }, (_, k) => 1 / (k + 1));
    const total = weights.reduce((a, b) => a + b, 0);
    let acc = 0;
    const cum = weights.map((w) => (acc += w / total));
    const failed = await db.query(`SELECT id::text AS id, queue, type, payload, worker_id, updated_at FROM jobs WHERE status = 'failed'`);
    for (let i = 0; i < failed.length; i += 5000) {
      const part = failed.slice(i, i + 5000).map((j, n) => {
        const r = (((i + n) * 2654435761) % 2 ** 32) / 2 ** 32;
        const k = Math.max(0, cum.findIndex((c) => c >= r));
        const msg = cause(k, i + n);
        return [j.id, j.queue, j.type, j.payload, msg, errorFingerprint(msg), j.updated_at.toISOString()];
      });
      await db.query(
        `INSERT INTO dead_letter_jobs (job_id, queue, type, payload, last_error, attempts, failed_at, fingerprint)
         SELECT id, q, t, p, e, 3, at, f FROM unnest($1::uuid[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::timestamptz[]) AS u(id, q, t, p, e, f, at)`,
        [0, 1, 2, 3, 4, 5, 6].map((c) => part.map((row) => row[c])),
      );
    }
    await db.query('VACUUM ANALYZE');
    const seeded = ((performance.now() - t0) / 1000).toFixed(0);
    const [{ n: jobs }] = await db.query(`SELECT count(*)::int AS n FROM jobs`);
    const [{ n: dlq }] = await db.query(`SELECT count(*)::int AS n FROM dead_letter_jobs`);

    const scope = { project: 'default' };
    const groups = await dlqGroups(db, 'default', { limit: 100 });
    const pick = [['the largest group', groups[0]], ['a middle group', groups[Math.floor(groups.length / 2)]], ['a small group', groups[groups.length - 1]]];
    console.log(`${jobs} jobs rows, ${dlq} dead-letter rows in ${groups.length}+ groups (seeded in ${seeded} s), ${RUNS} runs each\n`);
    console.log('| what | median ms | max ms |\n|---|---|---|');
    for (const [label, g] of pick) {
      const t = await time(async () => {
        const { facts } = await groupFacts(db, scope, [g], Date.now());
        rulesSummary(facts.get(g.fingerprint), Date.now());
      });
      console.log(`| rules summary of ${label} alone (${g.count} jobs): 3 queries + the sentences | ${fmt(t)} |`);
    }
    const list = await time(async () => {
      const { facts } = await groupFacts(db, scope, groups, Date.now());
      for (const g of groups) rulesSummary(facts.get(g.fingerprint), Date.now());
    });
    console.log(`| rules summaries of the ${groups.length} groups of GET /jobs/dlq/groups together | ${fmt(list)} |`);
    console.log(`| the same, per group | ${fmt(list, groups.length)} |`);
    const listOnly = await time(() => dlqGroups(db, 'default', { limit: 100 }));
    console.log(`| for comparison: the group list itself (limit 100) | ${fmt(listOnly)} |`);

    const g = groups[0];
    const h = hourlySql(scope, [g.fingerprint], Date.now());
    const s = sampleSql(scope, [g.fingerprint]);
    const { samples } = await groupFacts(db, scope, [g], Date.now());
    const rows = samples.get(g.fingerprint);
    const e = [[g.fingerprint], [rows[0].queue], [rows[0].type], [idAtMs(g.firstAt)]];
    for (const [name, sql, params] of [['hourly counts (the largest group)', h.sql, h.params], ['newest jobs and their workers (the largest group)', s.sql, s.params], ['earlier completed jobs (the largest group)', earlierSql(), e]]) {
      const plan = await db.query(`EXPLAIN (ANALYZE, BUFFERS, COSTS OFF) ${sql}`, params);
      console.log(`\n#### ${name}\n\n\`\`\`\n${plan.map((r) => r['QUERY PLAN']).join('\n')}\n\`\`\``);
    }
  } finally {
    await db.destroy();
    await dropDatabase(url.toString());
  }
}

main().then(
  () => process.exit(0),
  (e) => {
    console.error(e);
    process.exit(1);
  },
);
