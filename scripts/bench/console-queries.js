#!/usr/bin/env node
/*
 * Timings of the operator console's PostgreSQL queries on seeded tables, for
 * docs/query-plans.md ("Console queries"): GET /dashboard/metrics over 1 h,
 * 24 h, 7 d and 31 d (per-second counters for the last two hours, per-minute
 * roll-ups for 31 days, 7 queues busy every second), GET /jobs/dlq/groups
 * and GET /jobs/dlq/all?fingerprint= at DLQ_ROWS dead-letter rows.
 *
 *   npx tsc -p tsconfig.build.json && node scripts/bench/console-queries.js
 * Env: DLQ_ROWS (default 100000), RUNS (default 20), PG_URL (server for a throwaway database).
 * Prints markdown: median and max ms per query, and the plans of the heaviest ones.
 */
const path = require('node:path');
const { performance } = require('node:perf_hooks');
const dist = (p) => require(path.resolve(__dirname, '../../dist', p));
const { openPostgres } = dist('postgres/data-source');
const { finishSeriesSql, seriesBuckets } = dist('history/finish-series');
const { dlqGroupsSql } = dist('history/dlq-groups');
const { listDlqSql } = dist('history/list-dlq');
const { errorFingerprint } = dist('core/error-fingerprint');
const { dropDatabase } = require('../lib/cleanup');

const DLQ_ROWS = Number(process.env.DLQ_ROWS || 100_000);
const RUNS = Number(process.env.RUNS || 20);
const PG_URL = process.env.PG_URL || 'postgres://postgres@127.0.0.1:5432/postgres';
const QUEUES = ['default', 'emails', 'images', 'reports', 'webhooks', 'exports', 'billing'];

/** A word for a number (letters only: digits would be normalized away, merging the causes). */
const word = (k) => String.fromCharCode(97 + (k % 26)) + String.fromCharCode(97 + Math.floor(k / 26) % 26) + 'x';
/** 200 causes, each with values that vary per job; cause k's share falls off as 1/(k+1). */
const causes = Array.from({ length: 200 }, (_, k) => (n) =>
  [`order ${n} not found in shard ${word(k)}`, `connect ECONNREFUSED 10.0.3.${n % 250}:5432 (${word(k)})`, `upstream https://api.example.com/v1/x/${n} timed out after ${n % 5000} ms in ${word(k)}`,
    `invalid recipient "user${n}@example.com" (rule ${word(k)})`][k % 4]);

async function time(db, sql, params) {
  const ms = [];
  for (let i = 0; i < RUNS; i++) {
    const t = performance.now();
    await db.query(sql, params);
    ms.push(performance.now() - t);
  }
  ms.sort((a, b) => a - b);
  return { median: ms[Math.floor(ms.length / 2)].toFixed(2), max: ms[ms.length - 1].toFixed(2) };
}

async function main() {
  const url = new URL(PG_URL);
  url.pathname = `/sluice_bench_console_${process.pid}`;
  const { dataSource: db } = await openPostgres(url.toString(), 4);
  try {
    const q = QUEUES.map((x) => `'${x}'`).join(',');
    // Per-second counters: the last 2 hours, every queue every second.
    await db.query(`INSERT INTO job_finishes (bucket, queue, completed, failed)
      SELECT date_trunc('second', now()) - make_interval(secs => s), qn, 5 + s % 7, (s % 13 = 0)::int FROM generate_series(0, 7199) s, unnest(ARRAY[${q}]) qn`);
    // Per-minute roll-ups: the 31 days before that.
    await db.query(`INSERT INTO job_finishes_minute (bucket, queue, completed, failed)
      SELECT date_trunc('minute', now()) - make_interval(mins => 120 + m), qn, 300 + m % 50, m % 5 FROM generate_series(0, 31 * 1440) m, unnest(ARRAY[${q}]) qn`);
    // Dead-letter rows: DLQ_ROWS over 7 days, 200 causes (shares ~ 1/(k+1)), 7 queues, 20 types.
    const weights = causes.map((_, k) => 1 / (k + 1));
    const total = weights.reduce((a, b) => a + b, 0);
    const rows = [];
    let acc = 0;
    const cum = weights.map((w) => (acc += w / total));
    for (let i = 0; i < DLQ_ROWS; i++) {
      const r = ((i * 2654435761) % 2 ** 32) / 2 ** 32;
      const k = cum.findIndex((c) => c >= r);
      const msg = causes[k < 0 ? 199 : k](i);
      rows.push([msg, errorFingerprint(msg), QUEUES[i % 7], `${QUEUES[i % 7]}.t${i % 3}`, i]);
    }
    for (let i = 0; i < rows.length; i += 5000) {
      const part = rows.slice(i, i + 5000);
      await db.query(
        `INSERT INTO dead_letter_jobs (job_id, queue, type, payload, last_error, attempts, failed_at, fingerprint)
         SELECT gen_random_uuid(), q, t, '{}', e, 3, now() - make_interval(secs => (n % 604800)), f
         FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::int[]) AS u(e, f, q, t, n)`,
        [part.map((r) => r[0]), part.map((r) => r[1]), part.map((r) => r[2]), part.map((r) => r[3]), part.map((r) => r[4])],
      );
    }
    await db.query('VACUUM ANALYZE job_finishes');
    await db.query('VACUUM ANALYZE job_finishes_minute');
    await db.query('VACUUM ANALYZE dead_letter_jobs');

    const now = Date.now();
    const out = [];
    const metric = async (label, spanMs, stepMs, queue) => {
      const range = { fromMs: now - spanMs, toMs: now };
      const { first, count } = seriesBuckets(range, stepMs);
      const q = finishSeriesSql({ queue });
      const params = q.params(first * stepMs, (first + count) * stepMs, stepMs);
      out.push([`metrics ${label}${queue ? ` ?queue=${queue}` : ''} (stepMs ${stepMs}, ${count} points)`, await time(db, q.sql, params)]);
      return { sql: q.sql, params };
    };
    await metric('1 h', 3_600_000, 10_000);
    await metric('1 h', 3_600_000, 5000, 'emails');
    await metric('24 h', 86_400_000, 60_000);
    await metric('24 h', 86_400_000, 300_000, 'emails');
    const week = await metric('7 d', 7 * 86_400_000, 600_000);
    await metric('7 d', 7 * 86_400_000, 3_600_000, 'emails');
    await metric('31 d', 31 * 86_400_000, 3_600_000);
    const all = dlqGroupsSql({}, 100);
    const emails = dlqGroupsSql({ queue: 'emails' }, 100);
    out.push([`dlq groups, all queues (${DLQ_ROWS} rows, limit 100)`, await time(db, all.sql, all.params)]);
    out.push([`dlq groups ?queue=emails (limit 100)`, await time(db, emails.sql, emails.params)]);
    const top = rows[0][1];
    const byFp = listDlqSql({ fingerprint: top }, null, 50);
    out.push(['dlq list ?fingerprint= (the largest group, limit 50)', await time(db, byFp.sql, byFp.params)]);

    console.log(`| query | median ms | max ms |\n|---|---|---|`);
    for (const [name, t] of out) console.log(`| ${name} | ${t.median} | ${t.max} |`);
    for (const [name, sql, params] of [
      ['metrics 7 d, all queues', week.sql, week.params],
      ['dlq groups, all queues', all.sql, all.params],
    ]) {
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
