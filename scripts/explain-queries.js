#!/usr/bin/env node
/*
 * Regenerates docs/query-plans.md: EXPLAIN (ANALYZE, BUFFERS) of the history
 * queries (src/history, run from dist/) at 1,000,000 rows in `jobs`.
 *
 *   npx tsc -p tsconfig.build.json && node scripts/explain-queries.js
 *
 * Creates a throwaway database next to DATABASE_URL's (default
 * postgres://postgres@127.0.0.1:5432/postgres), applies every migration,
 * generates the rows with generate_series (UUIDv7-like ids built from a
 * timestamp, so id order is creation order), VACUUM ANALYZEs, explains each
 * hot query with the exact SQL the services run, writes the file and drops
 * the database (KEEP_DB=1 keeps it and prints its URL).
 * Env: JOBS (default 1000000), OUT (default docs/query-plans.md).
 */
const fs = require('node:fs');
const path = require('node:path');
const crypto = require('node:crypto');
const { Client } = require('pg');
const { dropDatabase } = require('./lib/cleanup');

const dist = (p) => require(path.resolve(__dirname, '../dist', p));
const { openPostgres, MIGRATIONS } = dist('postgres/data-source');
const { epochMs } = dist('history/common');
const { GET_JOB_SQL } = dist('history/get-job');
const { listJobsSql } = dist('history/list-jobs');
const { listDlqSql } = dist('history/list-dlq');
const { JOB_EVENTS_SQL } = dist('history/job-events');
const { JOB_EXECUTIONS_SQL } = dist('history/job-executions');
const { JOB_LOGS_SQL } = dist('history/job-logs');
const { TERMINAL_COUNTS_SQL, DLQ_COUNTS_SQL } = dist('history/queue-counts');
const { THROUGHPUT_SQL, throughputSql } = dist('history/throughput');
const { RECENT_JOBS_SQL, RECENT_LIMIT, recentJobsSql } = dist('dashboard/recent-jobs');
const { PRUNE_CANDIDATES_SQL } = dist('maintenance/retention');
const { ensureDays, DAY_MS, PARTITION_DAYS_AHEAD } = dist('postgres/partitions');

const N = Number(process.env.JOBS || 1_000_000);
const OUT = path.resolve(__dirname, '..', process.env.OUT || 'docs/query-plans.md');
const BASE = process.env.DATABASE_URL || 'postgres://postgres@127.0.0.1:5432/postgres';
const LIMIT = 50;

const QUEUES = [
  // [name, share of jobs in %]
  ['default', 35], ['emails', 25], ['images', 15], ['reports', 10], ['webhooks', 5], ['exports', 3], ['billing', 2],
  // The project `acme` (src/core/project-queue.ts: its queues are `acme/<queue>`).
  ['acme/orders', 3], ['acme/thumbs', 2],
];
const COUNTER_TABLES = ['job_counts', 'dead_letter_counts'];

/** SQL CASE mapping a 0..99 bucket to a queue name by share. */
function queueCase(bucket) {
  let acc = 0;
  const arms = QUEUES.map(([q, share]) => `WHEN ${bucket} < ${(acc += share)} THEN '${q}'`);
  return `CASE ${arms.join(' ')} END`;
}

/**
 * Jobs over the last 30 days, one every 30d/N ms, so the newest finished in the
 * last minute. Statuses: half of the newest 0.5% are waiting/delayed/active,
 * the rest 94% completed, 3% failed (in dead_letter_jobs), 3% cancelled. Each
 * queue has three types `<queue>.send|resize|sync` (50/35/15%, the bare queue
 * name for a project's queue); a dormant queue `legacy` holds 0.2% of the jobs,
 * all among the oldest 1%, and a dormant project `old` (queue `old/archive`)
 * 0.01%, among the oldest 1% too.
 */
function generateSql(n) {
  const span = 30 * 86_400_000;
  return [
    `CREATE TEMP TABLE g AS
     SELECT i, ms, h1, h2, h3, CASE WHEN i <= ${Math.floor(n / 100)} AND h3 < 200 THEN 'legacy'
       WHEN i <= ${Math.floor(n / 100)} AND h3 < 210 THEN 'old/archive' ELSE ${queueCase('h1')} END AS q,
       CASE WHEN i > ${Math.floor(n * 0.995)} AND h2 < 50 THEN (ARRAY['waiting','waiting','delayed','active'])[h3 % 4 + 1]
            WHEN h2 < 94 THEN 'completed' WHEN h2 < 97 THEN 'failed' ELSE 'cancelled' END AS s
     FROM (SELECT i, (extract(epoch FROM now()) * 1000)::bigint - ${span} + (i::bigint * ${span} / ${n}) AS ms,
                  abs(hashint4(i)) % 100 AS h1, abs(hashint4(i + 7919)) % 100 AS h2, abs(hashint4(i + 104729)) % 1000 AS h3
           FROM generate_series(1, ${n}) i) x`,
    `ALTER TABLE g ADD COLUMN id uuid, ADD COLUMN t text, ADD COLUMN dur int`,
    `UPDATE g SET id = (lpad(to_hex(ms), 12, '0') || '7' || lpad(to_hex(i % 4096), 3, '0') || '8' || lpad(to_hex(i), 15, '0'))::uuid,
                  t = regexp_replace(q, '^.*/', '') || '.' || CASE WHEN h3 < 500 THEN 'send' WHEN h3 < 850 THEN 'resize' ELSE 'sync' END,
                  dur = 20 + h3`,
    `INSERT INTO jobs (id, queue, type, status, priority, attempts, max_attempts, backoff, timeout_ms, payload, progress, result, last_error,
                       worker_id, execution_seq, created_at, run_at, started_at, finished_at, updated_at, last_event_ms, last_event_seq)
     SELECT id, q, t, s, 0, CASE WHEN s IN ('waiting','delayed') THEN 0 WHEN s = 'failed' THEN 3 ELSE 1 END, 3,
            'exponential|2000|3600000|equal', 600000, '{"n":' || i || ',"to":"user' || h3 || '@example.com"}', NULL,
            CASE WHEN s = 'completed' THEN '{"ok":true}' END, CASE WHEN s = 'failed' THEN 'Error: upstream said 500' END,
            CASE WHEN s <> 'waiting' AND s <> 'delayed' THEN 'w-' || h3 % 16 END,
            CASE WHEN s IN ('waiting','delayed') THEN 0 WHEN s = 'failed' THEN 3 ELSE 1 END,
            to_timestamp(ms / 1000.0), to_timestamp((ms + CASE WHEN s = 'delayed' THEN 3600000 ELSE 0 END) / 1000.0),
            CASE WHEN s NOT IN ('waiting','delayed') THEN to_timestamp((ms + 50) / 1000.0) END,
            CASE WHEN s IN ('completed','failed','cancelled') THEN to_timestamp((ms + 50 + dur) / 1000.0) END,
            to_timestamp((ms + CASE WHEN s IN ('completed','failed','cancelled') THEN 50 + dur WHEN s = 'active' THEN 50 ELSE 0 END) / 1000.0),
            ms + CASE WHEN s IN ('completed','failed','cancelled') THEN 50 + dur WHEN s = 'active' THEN 50 ELSE 0 END, 0
     FROM g ORDER BY i`,
    `INSERT INTO dead_letter_jobs (job_id, queue, type, payload, last_error, attempts, failed_at)
     SELECT id, queue, type, payload, last_error, attempts, finished_at FROM jobs WHERE status = 'failed'`,
    // Timeline: enqueued, claimed, then the final event (3 per finished job). As the writer stores them
    // (migration 1796001900000): the claim and a completion in the execution row, the rest job_events rows.
    `INSERT INTO job_events (queue, stream_ms, stream_seq, job_id, at, event, from_status, to_status, attempt, execution_seq, worker_id, reason, error, data)
     SELECT q, ms + off, 0, id, to_timestamp((ms + off) / 1000.0), ev, f, tt, a, x, w, NULL, er, d
     FROM g CROSS JOIN LATERAL (VALUES
       (0, 'enqueued', NULL, CASE WHEN s = 'delayed' THEN 'delayed' ELSE 'waiting' END, 0, NULL::int, NULL, NULL, '{"n":' || i || '}'),
       (50 + dur, CASE WHEN s IN ('failed','cancelled') THEN s END, 'active', s, 1, 1, 'w-' || h3 % 16,
        CASE WHEN s = 'failed' THEN 'Error: upstream said 500' END, NULL)
     ) v(off, ev, f, tt, a, x, w, er, d)
     WHERE ev IS NOT NULL
     ORDER BY i, off`,
    `INSERT INTO job_executions (job_id, execution_seq, queue, attempt, worker_id, started_at, finished_at, outcome, error, duration_ms,
                                 claim_ms, claim_seq, end_ms, end_seq, result)
     SELECT id, 1, q, 1, 'w-' || h3 % 16, to_timestamp((ms + 50) / 1000.0),
            CASE WHEN s IN ('completed','failed','cancelled') THEN to_timestamp((ms + 50 + dur) / 1000.0) END,
            CASE WHEN s IN ('completed','failed','cancelled') THEN s ELSE 'running' END,
            CASE WHEN s = 'failed' THEN 'Error: upstream said 500' END, CASE WHEN s IN ('completed','failed','cancelled') THEN dur END,
            ms + 50, 0, CASE WHEN s = 'completed' THEN ms + 50 + dur END, CASE WHEN s = 'completed' THEN 0 END,
            CASE WHEN s = 'completed' THEN '{"ok":true}' END
     FROM g WHERE s NOT IN ('waiting','delayed')`,
    // Two log lines for one job in ten.
    `INSERT INTO job_logs (queue, stream_ms, stream_seq, job_id, at, attempt, level, message)
     SELECT q, ms + 50 + k, 1, id, to_timestamp((ms + 50 + k) / 1000.0), 1, 'info', 'step ' || k
     FROM g CROSS JOIN generate_series(1, 2) k WHERE i % 10 = 0 AND s NOT IN ('waiting','delayed') ORDER BY i, k`,
    `DROP TABLE g`,
  ];
}

/** The hot queries, each with the SQL the service runs and example parameters. */
async function hotQueries(c) {
  const one = async (sql, params = []) => (await c.query(sql, params)).rows[0];
  const mid = (await one(`SELECT id FROM jobs ORDER BY id DESC OFFSET $1 LIMIT 1`, [Math.floor(N / 2)])).id;
  const sample = (await one(`SELECT id FROM jobs WHERE status = 'completed' AND id < $1 ORDER BY id DESC LIMIT 1`, [mid])).id;
  const logged = (await one(`SELECT job_id FROM job_logs ORDER BY stream_ms DESC, stream_seq DESC LIMIT 1`)).job_id;
  const dlqMid = await one(
    `SELECT to_char(failed_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') AS f, job_id FROM dead_letter_jobs ORDER BY failed_at DESC, job_id DESC OFFSET (SELECT count(*) / 2 FROM dead_letter_jobs) LIMIT 1`,
  );
  const lastFinish = Number((await one(`SELECT ${epochMs('max(finished_at)')} AS ms FROM jobs`)).ms);
  const queues = [...QUEUES.map(([q]) => q), 'legacy', 'old/archive'];
  const list = (f, after = null) => listJobsSql(f, after, LIMIT);
  const dlq = (f, after = null) => listDlqSql(f, after, LIMIT);
  const dlqAfter = { failedAt: dlqMid.f, jobId: dlqMid.job_id };
  const recentSort = "the sorts are of the project's queue names and a top-N of at most (queues) × 20 rows";
  const projectSort = "the top-N sort is of at most (the project's queues) × (statuses) × (limit + 1) rows, whatever the table size";
  return [
    { name: 'getJob (Postgres fallback)', purpose: '`GET /jobs/:id` once Redis has pruned the job', ...{ sql: GET_JOB_SQL, params: [sample] } },
    { name: 'listJobs, no filter', purpose: '`GET /jobs`', ...list({}) },
    { name: 'listJobs, no filter, page from the middle (cursor)', purpose: '`GET /jobs?cursor=` 500,000 rows deep', ...list({}, mid) },
    { name: 'listJobs ?queue=', purpose: '`GET /jobs?queue=emails`', ...list({ queue: 'emails' }) },
    { name: 'listJobs ?queue= (dormant queue)', purpose: '`GET /jobs?queue=legacy`: 2,000 jobs, all 29 days old', ...list({ queue: 'legacy' }) },
    { name: 'listJobs ?queue= with cursor', purpose: '`GET /jobs?queue=emails&cursor=` half way down', ...list({ queue: 'emails' }, mid) },
    {
      name: 'listJobs ?status=',
      purpose: '`GET /jobs?status=failed`',
      ...list({ status: 'failed' }),
      sortOk: 'the top-N sort is of at most (queues with that status) × (limit + 1) rows, whatever the table size',
    },
    { name: 'listJobs ?type=', purpose: '`GET /jobs?type=images.sync`', ...list({ type: 'images.sync' }) },
    { name: 'listJobs ?queue=&status=', purpose: '`GET /jobs?queue=emails&status=completed`', ...list({ queue: 'emails', status: 'completed' }) },
    { name: 'listJobs ?queue=&status= (live status)', purpose: '`GET /jobs?queue=default&status=active`', ...list({ queue: 'default', status: 'active' }) },
    { name: 'listJobs ?queue=&type=', purpose: '`GET /jobs?queue=emails&type=emails.sync`', ...list({ queue: 'emails', type: 'emails.sync' }) },
    { name: 'listJobs ?queue=&type= (dormant queue)', purpose: '`GET /jobs?queue=legacy&type=legacy.send`', ...list({ queue: 'legacy', type: 'legacy.send' }) },
    { name: 'listJobs ?status=&type=', purpose: '`GET /jobs?status=failed&type=reports.sync`', ...list({ status: 'failed', type: 'reports.sync' }) },
    { name: 'listJobs ?queue=&status=&type=', purpose: '`GET /jobs?queue=images&status=cancelled&type=images.sync`', ...list({ queue: 'images', status: 'cancelled', type: 'images.sync' }) },
    { name: 'listDlq, all queues', purpose: '`GET /jobs/dlq/all`', ...dlq({}) },
    { name: 'listDlq, all queues, with cursor', purpose: '`GET /jobs/dlq/all?cursor=` half way down', ...dlq({}, dlqAfter) },
    { name: 'listDlq ?queue=', purpose: '`GET /jobs/dlq/all?queue=emails`', ...dlq({ queue: 'emails' }) },
    { name: 'listDlq ?queue= with cursor', purpose: '`GET /jobs/dlq/all?queue=emails&cursor=`', ...dlq({ queue: 'emails' }, dlqAfter) },
    { name: 'listDlq ?type=', purpose: '`GET /jobs/dlq/all?type=reports.sync`', ...dlq({ type: 'reports.sync' }) },
    { name: 'listDlq ?queue=&type=', purpose: '`GET /jobs/dlq/all?queue=reports&type=reports.sync`', ...dlq({ queue: 'reports', type: 'reports.sync' }) },
    { name: 'jobEvents (timeline)', purpose: '`GET /jobs/:id/events`', sql: JOB_EVENTS_SQL, params: [sample], sortOk: 'the sort is of the one job\'s events' },
    { name: 'jobExecutions', purpose: '`GET /jobs/:id/executions`', sql: JOB_EXECUTIONS_SQL, params: [sample] },
    { name: 'jobLogs', purpose: '`GET /jobs/:id/logs`', sql: JOB_LOGS_SQL, params: [logged] },
    { name: 'counts: completed/cancelled per queue', purpose: '`counts` of `GET /queues` and `/dashboard/stats` (terminal part)', sql: TERMINAL_COUNTS_SQL, params: [queues] },
    { name: 'counts: failed (DLQ size) per queue', purpose: '`counts.failed`', sql: DLQ_COUNTS_SQL, params: [queues] },
    {
      name: 'reference only: counting `jobs` rows (not used)',
      purpose: 'nothing: it shows why the counts read `job_counts` (what a COUNT over the projection costs)',
      sql: `SELECT queue, status, count(*) FROM jobs WHERE queue = ANY($1::text[]) AND status = ANY('{completed,cancelled}'::text[]) GROUP BY 1, 2`,
      params: [queues],
      reference: true,
    },
    // "now" = the newest finish in the data (generation takes a while), so the last minute holds its N / 43,200 jobs.
    { name: 'throughput (last minute)', purpose: '`throughput` of `/dashboard/stats`', sql: THROUGHPUT_SQL, params: [lastFinish - 60_000] },
    // Projects: a project's lists when other projects' queues exist (with one project, the plans above).
    { name: 'listJobs of a project', purpose: '`GET /jobs` of project acme (5% of the jobs, two queues)', ...list({ project: 'acme' }), sortOk: projectSort },
    { name: 'listJobs of a project, with cursor', purpose: '`GET /jobs?cursor=` of project acme, half way down', ...list({ project: 'acme' }, mid), sortOk: projectSort },
    { name: 'listJobs of default among projects', purpose: '`GET /jobs` of project default (eight queues) while acme and old exist', ...list({ project: 'default' }), sortOk: projectSort },
    { name: 'listJobs of a dormant project', purpose: '`GET /jobs` of project old (100 jobs, 29 days old)', ...list({ project: 'old' }), sortOk: projectSort },
    { name: 'listJobs of a project ?status=', purpose: '`GET /jobs?status=failed` of project acme', ...list({ project: 'acme', status: 'failed' }), sortOk: projectSort },
    { name: 'listJobs of a project ?type=', purpose: '`GET /jobs?type=orders.sync` of project acme', ...list({ project: 'acme', type: 'orders.sync' }) },
    { name: 'listJobs of a project ?status=&type=', purpose: '`GET /jobs?status=completed&type=orders.send` of project acme', ...list({ project: 'acme', status: 'completed', type: 'orders.send' }) },
    { name: 'listDlq of a project', purpose: '`GET /jobs/dlq/all` of project acme', ...dlq({ project: 'acme' }), sortOk: projectSort },
    { name: 'listDlq of default among projects', purpose: '`GET /jobs/dlq/all` of project default', ...dlq({ project: 'default' }), sortOk: projectSort },
    { name: 'listDlq of a project ?type=', purpose: '`GET /jobs/dlq/all?type=orders.sync` of project acme', ...dlq({ project: 'acme', type: 'orders.sync' }), sortOk: projectSort },
    { name: 'recent jobs', purpose: '`GET /dashboard/recent` with one project', sql: RECENT_JOBS_SQL, params: [RECENT_LIMIT], sortOk: recentSort },
    { name: 'recent jobs of a project', purpose: '`GET /dashboard/recent` of project acme', ...recentJobsSql('acme'), sortOk: recentSort },
    {
      name: 'recent jobs of a dormant project',
      purpose: '`GET /dashboard/recent` of project old, idle for 29 days while the others worked (was a walk of every row updated since: 280–400 ms at 1M rows)',
      ...recentJobsSql('old'),
      sortOk: recentSort,
    },
    { name: 'throughput of a project (last minute)', purpose: '`throughput` of `/dashboard/stats` of project acme', sql: throughputSql('acme').sql, params: throughputSql('acme').params(lastFinish - 60_000) },
    // Retention of 20 days on 30 days of data: a third of the jobs are due.
    { name: 'retention: one prune batch', purpose: 'the retention pass (src/maintenance/retention.ts), which deletes the rows it locks', sql: PRUNE_CANDIDATES_SQL, params: [20, 1000] },
  ];
}

/** One sentence from the plan: which indexes and scans it uses, and whether it sorts or scans a table. */
function describe(plan) {
  const seen = new Map();
  for (const line of plan.split('\n')) {
    const m = /(Index Only Scan(?: Backward)?|Index Scan(?: Backward)?) using (\S+) on (\S+)(?: (\w+))?/.exec(line)
      || /(Bitmap Index Scan) on (\S+)/.exec(line);
    if (m) {
      const key = `${m[1]} on \`${m[2]}\``;
      const never = /never executed/.test(line);
      if (!seen.has(key) || !never) seen.set(key, never);
    }
  }
  // A sequential scan of a counters table (a row per queue and status) is the cheapest read of it; of a history table it is not.
  // One that never ran, or read an empty partition (a day ahead, `_ahead`: the planner's cheapest read of nothing), is not counted.
  const lines = plan.split('\n');
  const seq = [];
  lines.forEach((line, i) => {
    const m = /Seq Scan on (\S+)/.exec(line);
    if (!m || /never executed/.test(line)) return;
    const removed = lines.slice(i + 1, i + 4).some((l) => /Rows Removed by Filter: [1-9]/.test(l));
    if (/actual time=\S+ rows=0 /.test(line) && !removed) return;
    seq.push(m[1]);
  });
  const bigSeq = seq.filter((t) => !COUNTER_TABLES.includes(t));
  const sorts = [...plan.matchAll(/(?:->\s+|^)((?:Incremental )?Sort)\b/gm)].length;
  const parts = [...seen].map(([k, never]) => (never ? `${k} (only for active rows, not executed here)` : k));
  let s = parts.length ? `Uses ${parts.join(', ')}` : 'Uses no index';
  if (bigSeq.length) s += `; **sequential scan on ${[...new Set(bigSeq)].join(', ')}**`;
  else if (seq.length) s += `; sequential scan of the small counters table ${[...new Set(seq)].join(', ')} (one row per queue${seq.includes('job_counts') ? ' and status' : ''})`;
  else s += '; no sequential scan';
  s += sorts ? '; **has a sort**.' : '; no sort.';
  s += ' ' + partitionsRead(plan);
  return { sentence: s, bad: bigSeq.length > 0 || sorts > 0, sorts, bigSeq: bigSeq.length };
}

/**
 * Partition pruning in a plan (src/postgres/partitions.ts: one partition per
 * day, `_kept` the default): the partitions the plan names (the others were
 * pruned when it was made), those it actually read (not `never executed`),
 * and the subplans removed when it started or per loop (run-time pruning).
 */
function partitionsRead(plan) {
  const named = new Map();
  for (const line of plan.split('\n')) {
    const m = /\bon ((?:jobs|job_events|job_logs|job_executions|job_dependencies)_(?:d\d{8}|kept|legacy))\b/.exec(line);
    if (m) named.set(m[1], (named.get(m[1]) ?? false) || !/never executed/.test(line));
  }
  if (!named.size) return 'Reads no history partition.';
  const read = [...named.values()].filter(Boolean).length;
  const removed = [...plan.matchAll(/Subplans Removed: (\d+)/g)].reduce((a, m) => a + Number(m[1]), 0);
  return `Partitions: ${named.size} in the plan, ${read} read${removed ? `, ${removed} removed at run time` : ''}.`;
}

async function main() {
  const url = new URL(BASE);
  url.pathname = `/sluice_explain_${crypto.randomBytes(3).toString('hex')}`;
  const t0 = Date.now();
  // EXPLAIN_DB=<url>: explain on a database kept by an earlier run (KEEP_DB=1), without generating again.
  const reuse = process.env.EXPLAIN_DB ? new URL(process.env.EXPLAIN_DB) : null;
  if (reuse) url.pathname = reuse.pathname;
  const { dataSource, applied } = await openPostgres(url.toString(), 2);
  // The day partitions of the 30 days the data spans (the maintenance loop makes them ahead as days come).
  if (!reuse) await ensureDays(dataSource, Date.now() - 31 * DAY_MS, Date.now() + PARTITION_DAYS_AHEAD * DAY_MS);
  await dataSource.destroy();
  const c = new Client({ connectionString: url.toString() });
  await c.connect();
  let ok = false;
  try {
    if (!reuse) {
      for (const sql of generateSql(N)) await c.query(sql);
      await c.query('VACUUM (ANALYZE)');
    }
    const genSecs = reuse ? process.env.EXPLAIN_GEN_SECS || '?' : ((Date.now() - t0) / 1000).toFixed(0);
    const counts = (await c.query(`SELECT (SELECT count(*) FROM jobs) AS jobs, (SELECT count(*) FROM job_events) AS events,
      (SELECT count(*) FROM job_executions) AS executions, (SELECT count(*) FROM dead_letter_jobs) AS dlq, (SELECT count(*) FROM job_logs) AS logs`)).rows[0];
    const version = (await c.query('SHOW server_version')).rows[0].server_version;
    const out = [];
    const summary = [];
    const flagged = [];
    for (const q of await hotQueries(c)) {
      await c.query(`EXPLAIN (ANALYZE, BUFFERS) ${q.sql}`, q.params); // warm the cache: plans show the steady state
      const plan = (await c.query(`EXPLAIN (ANALYZE, BUFFERS) ${q.sql}`, q.params)).rows.map((r) => r['QUERY PLAN']).join('\n');
      const d = describe(plan);
      const sentence = q.sortOk && d.sorts && !d.bigSeq ? `${d.sentence} (${q.sortOk}.)` : d.sentence;
      const bad = q.sortOk && d.sorts && !d.bigSeq ? false : d.bad;
      const time = /Execution Time: ([\d.]+) ms/.exec(plan)?.[1];
      const mark = q.reference ? 'reference' : bad ? '**check**' : 'ok';
      if (bad && !q.reference) flagged.push(q.name);
      summary.push(`| ${q.name} | ${time} ms | ${mark} |`);
      out.push(`### ${q.name}\n\nServes ${q.purpose}. ${sentence}\n\n\`\`\`sql\n${q.sql}\n\`\`\`\nParameters: \`${JSON.stringify(q.params)}\`\n\n\`\`\`\n${plan}\n\`\`\`\n`);
      console.log(`${q.reference ? 'ref  ' : bad ? 'CHECK' : 'ok   '} ${time} ms  ${q.name}`);
    }
    const doc = `# Query plans of the history queries

Generated by \`node scripts/explain-queries.js\` (after \`npx tsc -p tsconfig.build.json\`); do not edit by hand.
PostgreSQL ${version}, a throwaway database with every migration (${MIGRATIONS.map((m) => m.name).join(', ')}),
${Number(counts.jobs).toLocaleString('en')} rows in \`jobs\`, ${Number(counts.events).toLocaleString('en')} in \`job_events\`,
${Number(counts.executions).toLocaleString('en')} in \`job_executions\`, ${Number(counts.dlq).toLocaleString('en')} in \`dead_letter_jobs\`,
${Number(counts.logs).toLocaleString('en')} in \`job_logs\` (generated with generate_series in ${genSecs} s, then VACUUM ANALYZE).

Data: one job every ${(30 * 86400 / N).toFixed(2)} s over 30 days, ids UUIDv7-like (48-bit ms timestamp first, so id order is creation
order); queues ${QUEUES.map(([q, s]) => `${q} ${s}%`).join(', ')}, plus a dormant queue \`legacy\` (0.2%, all among the oldest
1%) and a dormant project \`old\` (queue \`old/archive\`, 0.01%, among the oldest 1% too); types \`<queue>.send|resize|sync\` (50/35/15%); half of the newest 0.5% are waiting/delayed/active, the rest 94% completed,
3% failed (all in the DLQ), 3% cancelled. Page size ${LIMIT} (the services fetch limit + 1 rows to know whether a next page
exists). Each query ran once to warm the cache before the plan shown.

## What the plans led to (migration 1796000300000-HistoryQueries)

With only the first migration's indexes, on the same data: \`?status=&type=\` and \`?queue=&status=&type=\` were a BitmapAnd
plus a sort of every matching job (5.5 and 4.4 ms, growing with the matches); \`?queue=\` of a small or dormant queue sorted
all of that queue's jobs (\`jobs_queue_status_id\` cannot give id order across statuses); DLQ \`?queue=&type=\` was a bitmap
scan plus a sort, joined to \`jobs\` before the LIMIT; and the counts were a parallel sequential scan of \`jobs\` (281 ms) and
of \`dead_letter_jobs\` (10 ms), which no index fixes: an index-only scan of \`jobs_queue_status_id\` still reads ~960,000
entries (185 ms). So the migration adds \`jobs_queue_id (queue, id DESC)\`, \`jobs_type_status_id (type, status, id DESC)\`,
\`dead_letter_jobs_type_failed\`, \`dead_letter_jobs_queue_type_failed\`, functional-dependency statistics on (queue, type)
of both tables (a type nearly determines its queue; without them the planner under-estimates queue+type ~10x and picks
bitmap + sort), and the counters \`job_counts\` / \`dead_letter_counts\` kept exact by statement-level triggers; the DLQ page
is now cut by LIMIT before the join.

Write cost, measured on this data with a 1,000-row UPDATE that changes status (what an audit batch does): 6 → 8 indexes on
\`jobs\` took it from ~36 ms to ~44 ms; the counter trigger's cost was within run-to-run noise (~1 ms). A \`(queue, type, id)\`
index was left out (it would cost ~+7 ms more): \`?queue=&type=\` reads \`jobs_type_id\` (or the primary key) with queue as a
filter, fast while the type is enqueued on that queue, but a type that never ran on the queue scans all of the type's rows
(no sort; ~95 ms for a type with 22,000 jobs).

## Fewer indexes on \`jobs\` (migration 1796000900000-LeanJobIndexes)

Every job row the audit writer inserts, and every status change it applies (never a HOT update: status and times are
indexed), pays one insertion per index of \`jobs\`. On 1,000-row batches (server-side execution time, medians of 25), 8 → 4
indexes took an insert from 17.0 to 10.9 ms and a status-changing update from 24.7 to 16.0 ms. So \`jobs_queue_id\`,
\`jobs_type_id\`, \`jobs_status_id\` and \`jobs_finished_at\` went, and the queries they served read the three left
(\`jobs_queue_status_id\`, \`jobs_type_status_id\`, \`jobs_updated_at\`) and the primary key: \`?queue=\` and \`?type=\`
without a status are six LIMITed index ranges, one per status, merged by id (Merge Append: no sort); \`?status=\` alone is one
LIMITed range of \`jobs_queue_status_id\` per queue that has (had) jobs of that status (the rows of \`job_counts\`), then a
top-N sort of at most queues × (limit + 1) rows; retention walks the primary key up to the cutoff's UUIDv7 (a job finishes
after it is created); throughput sums per-second counters (\`job_finishes\`) that a statement-level trigger keeps, like
\`job_counts\`.

## Projects (migration 1796001500000-Projects)

A queue of a project other than \`default\` is named \`<project>/<queue>\` in every \`queue\` column (src/core/project-queue.ts), so
a project's rows are those whose queue has its prefix (\`default\`: no \`/\`). With one project (every known queue is its own)
the services run the plans above unchanged. Otherwise a list without \`?queue=\` starts from the project's rows of the counter
tables (\`job_counts\`, \`dead_letter_counts\`: one row per queue and status, filtered by the prefix) and takes one LIMITed
range of \`jobs_queue_status_id\` (\`dead_letter_jobs_queue_failed\`) per row, then a top-N sort of at most queues × statuses
× (limit + 1) rows (for \`jobs\` ids only, read index-only, then the page's rows by primary key: sorting whole rows took the
default project's page from 1.2 to 10.8 ms); with a type, the type's ranges of \`jobs_type_status_id\` with the prefix as a filter (as a queue filter
is with a type). No index was added: the write path is unchanged. The recent jobs of a project are the backward scan of
\`jobs_updated_at\` with the prefix as a filter: cheap while the project is busy, a scan of every row updated since for a
project idle while others worked (the reference query below).

## Partitioned history (migration 1796001800000-PartitionedHistory)

\`jobs\` (by \`id\`) and \`job_events\`, \`job_logs\`, \`job_executions\`, \`job_dependencies\` (by \`job_id\`) are
partitioned by RANGE on the job's UUIDv7, one partition per UTC day of creation plus a DEFAULT \`_kept\` partition
(src/postgres/partitions.ts); retention detaches and drops whole days (src/postgres/partition-retire.ts). What that does to
the plans: a read by job id (\`GET /jobs/:id\`, its events, executions, logs) names one partition, pruned when the plan
is made (a prepared statement's generic plan prunes when it starts); a page without a cursor reads the day partitions newest
first (\`Append\` in partition order, or Merge Append, stopped by LIMIT after the first day or two); a page with a cursor
prunes every day after it. Each query below says how many partitions its plan names and how many it read. The events' and
logs' key became (job_id, stream_ms, stream_seq): it serves the timeline and the writer's idempotence, one index less per
row. \`jobs_updated_at\` became \`jobs_queue_updated_at (queue, updated_at DESC)\`: the recent jobs of a project are the
newest rows of each of its queues (the rows of \`job_counts\`), merged across the days, then a top-N sort of at most
queues × 20 rows — a dormant project reads its own few rows instead of every row updated since it was last busy.

The \`CASE WHEN j.status = 'active' THEN EXISTS (...)\` in the job queries derives \`cancelRequested\`; its SubPlan probes
the events' key in the job's own day (pruned per row at run time) only for active rows.

## Failure summaries (migration 1796002100000-DlqSummaries)

The rules summary of each dead-letter group (src/history/dlq-summary.ts, API.md v1.3) is three queries for all the groups
one \`GET /jobs/dlq/groups\` lists, each a range of an index that exists already (no index added, the write path is unchanged):
- hourly counts: one range of \`dead_letter_jobs_fingerprint (fingerprint, failed_at DESC) INCLUDE (queue, type)\` per
  fingerprint over the last 24 h, index-only (the project's condition reads the INCLUDEd queue), grouped by hour;
- the newest 50 jobs: per fingerprint, the 50th newest failure time first (an index-only scan of the same index in its
  order, stopped after 50 entries), then the rows from that time on (a bitmap of about 50 rows), each joined to its \`jobs\`
  row for the last worker by primary key — one day partition read per row, pruned at run time (the id is a parameter of
  the nested loop). Ordering the group's rows with \`LIMIT 50\` instead made the planner, which estimates every group at the
  average size, read a large group whole and sort it (5.8 ms for 8,507 rows, linear in the group's size; now 0.36 ms);
- the earlier completed jobs (for the payload keys that are new): per group, one backward range of \`jobs_type_status_id\`
  (type, status, id DESC) below the UUIDv7 of the group's first failure, newest day first, stopped at 20 rows, queue as a
  filter.

The model summaries' cache (\`dlq_summaries\`) is read by primary key (project, fingerprint); the hourly budget counts
\`summary_model_calls\` by its \`at\` index. Plans and timings at 1,000,000 \`jobs\` rows and 50,000 dead-letter rows:
\`node scripts/bench/dlq-summaries.js\` ([benchmarks.md](benchmarks.md#failure-summaries-2026-12-05)).

| query | execution time | seq scan / sort |
|---|---|---|
${summary.join('\n')}

${out.join('\n')}`;
    fs.mkdirSync(path.dirname(OUT), { recursive: true });
    fs.writeFileSync(OUT, doc);
    console.log(`wrote ${path.relative(process.cwd(), OUT)} (migrations applied: ${applied.length})`);
    if (flagged.length) console.error(`sequential scan or sort in: ${flagged.join('; ')}`);
    ok = flagged.length === 0;
  } finally {
    await c.end();
    if (process.env.KEEP_DB === '1' || reuse) console.log(`kept ${url}`);
    else await dropDatabase(url.toString());
    if (!ok) process.exitCode = 1;
  }
}

module.exports = { generateSql };

if (require.main === module) {
  main().catch((e) => {
    console.error(`explain-queries failed: ${e.stack || e.message}`);
    process.exit(1);
  });
}
