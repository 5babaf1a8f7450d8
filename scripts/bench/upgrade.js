#!/usr/bin/env node
/*
 * The upgrade to the partitioned history (migration 1796001800000) on a
 * history written by the schema before it: how long the migration takes
 * (and so how long the history tables are locked), per --jobs rows.
 *
 *   npm run build && node scripts/bench/upgrade.js --jobs 1000000
 *
 * Creates a throwaway database, applies every migration before
 * PartitionedHistory, generates the rows as scripts/explain-queries.js does
 * (generate_series: jobs, ~3 events per job, executions, logs, the DLQ),
 * VACUUM ANALYZE, then times the remaining migration, checks the rows are
 * all still there (counts before = after) and that GET /jobs/:id's query
 * reads one of them, and drops the database (KEEP_DB=1 keeps it).
 */
const path = require('node:path');
const crypto = require('node:crypto');
const { Client } = require('pg');
const { generateSql } = require('../explain-queries');
const { dropDatabase } = require('../lib/cleanup');

const dist = (p) => require(path.resolve(__dirname, '../../dist', p));
const { createDataSource, ensureDatabase } = dist('postgres/data-source');
const { GET_JOB_SQL } = dist('history/get-job');

const i = process.argv.indexOf('--jobs');
const JOBS = i < 0 ? 1_000_000 : Number(process.argv[i + 1]);
const BASE = process.env.DATABASE_URL || 'postgres://postgres@127.0.0.1:5432/postgres';

const COUNTS = `SELECT (SELECT count(*) FROM jobs)::int AS jobs, (SELECT count(*) FROM job_events)::int AS events,
  (SELECT count(*) FROM job_executions)::int AS executions, (SELECT count(*) FROM job_logs)::int AS logs,
  (SELECT sum(n) FROM job_counts)::int AS counted`;

async function main() {
  const url = new URL(BASE);
  url.pathname = `/sluice_upgrade_${crypto.randomBytes(3).toString('hex')}`;
  await ensureDatabase(url.toString());
  try {
    const before = createDataSource(url.toString(), 2, 'PartitionedHistory1796001800000');
    await before.initialize();
    await before.runMigrations({ transaction: 'each' });
    await before.destroy();
    const c = new Client({ connectionString: url.toString() });
    await c.connect();
    const g0 = Date.now();
    for (const sql of generateSql(JOBS)) await c.query(sql);
    await c.query('VACUUM (ANALYZE)');
    const was = (await c.query(COUNTS)).rows[0];
    const size = (await c.query(`SELECT pg_size_pretty(pg_database_size(current_database())) AS s`)).rows[0].s;
    console.log(`old schema: ${JSON.stringify(was)} (${size}), generated in ${((Date.now() - g0) / 1000).toFixed(0)} s`);
    await c.end();

    const ds = createDataSource(url.toString(), 2);
    await ds.initialize();
    const t0 = Date.now();
    const applied = await ds.runMigrations({ transaction: 'each' });
    const ms = Date.now() - t0;
    const is = (await ds.query(COUNTS))[0];
    const [one] = await ds.query(`SELECT id FROM jobs_legacy ORDER BY id DESC LIMIT 1`);
    const got = await ds.query(GET_JOB_SQL, [one.id]);
    await ds.destroy();
    console.log(`migrated (${applied.map((m) => m.name).join(', ')}) in ${ms} ms: ${JSON.stringify(is)}`);
    const same = JSON.stringify(was) === JSON.stringify(is) && got.length === 1;
    console.log(same ? 'every row is still there and readable' : 'ROWS DIFFER');
    if (!same) process.exitCode = 1;
  } finally {
    if (process.env.KEEP_DB === '1') console.log(`kept ${url}`);
    else await dropDatabase(url.toString());
  }
}

main().catch((e) => {
  console.error(e.stack || e.message);
  process.exit(1);
});
