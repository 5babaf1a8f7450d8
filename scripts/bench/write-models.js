#!/usr/bin/env node
/*
 * The mirror's write model (issue 22): what PostgreSQL spends per job on the
 * history rows of today's model, against two candidate models, on the real
 * schema (every migration, the partitioned tables, their indexes and the
 * job_counts trigger). A decision aid, not the writer: the candidates are
 * written by plain statements here, and nothing of src/ uses them.
 *
 *   npm run build && node scripts/bench/write-models.js
 *   node scripts/bench/write-models.js --jobs 20000 --batch 500 --rounds 3
 *
 * Each round, per model: --jobs fresh jobs are enqueued (one batch per
 * --batch jobs), then processed (claimed + completed), in two shapes:
 *   together  — a job's claimed and completed arrive in the same batch;
 *   split     — claimed in one batch, completed in the next (what a busy
 *               writer sees for about 40 % of the jobs at 10,000 jobs/s).
 * Models:
 *   today     — writeBatch() of src/mirror/batch-writer (project() of the
 *               stream entries): the enqueue COPYs the jobs row and its
 *               `enqueued` event; processing updates the jobs row, inserts
 *               an event row per transition and the execution row.
 *   row       — one row write per job per batch: the job's transitions are
 *               folded into its jobs row, the events appended to a compact
 *               text column (`timeline`, one line per event), the execution
 *               kept in the row's own started_at / finished_at; no event or
 *               execution rows. GET /jobs/:id/events would read one row.
 *   append    — an append-only timeline: one COPY row per job per batch
 *               (job_id, the batch's newest stream id, the lines); the jobs
 *               row is written at enqueue only. What status lists would then
 *               have to derive is not measured: this is the floor.
 * Measured: the PostgreSQL backend's CPU (/proc/<pid>/stat of the one
 * connection the writes go through; so it must run on this machine's
 * PostgreSQL) per job, µs; and this process' CPU spent building the
 * statements (the writer's Node share), µs per job. Medians over rounds.
 * The database is created on DATABASE_URL's server and dropped at the end.
 * --models today,row,append and --shapes together,split pick what runs;
 * --replayed writes today's batches in the idempotent form (a takeover's, a
 * replay's) instead of the fresh one of first reads (COPY where it can);
 * --setup-sql "<sql>" runs after the migrations, to measure what a schema
 * change would save (e.g. "DROP TRIGGER jobs_count_update ON jobs").
 */
const fs = require('node:fs');
const path = require('node:path');

const dist = (p) => require(path.resolve(__dirname, '../../dist', p));
const { createDataSource } = dist('postgres/data-source');
const { writeBatch, planBatch, batchMessage } = dist('mirror/batch-writer');
const { sendBatch } = dist('postgres/pg-batch');
const { textArray, numArray } = dist('postgres/pg-array');
const { project, entryFields } = dist('mirror/projection');
const { dropDatabase } = require('../lib/cleanup');
const { arg, median, v7, ENQUEUE_OPTS: OPTS } = require('../lib/bench-common');

const JOBS = Number(arg('jobs', 20000));
const BATCH = Number(arg('batch', 500));
const ROUNDS = Number(arg('rounds', 3));
const MODELS = arg('models', 'today,row,append').split(',');
const SHAPES = arg('shapes', 'together,split').split(',');
const SETUP_SQL = arg('setup-sql', null);
const REPLAYED = process.argv.includes('--replayed');
const PG_BASE = process.env.DATABASE_URL || 'postgres://postgres@127.0.0.1:5432/postgres';
const TICK_US = 1e6 / 100; // /proc/<pid>/stat counts in clock ticks (USER_HZ 100)

function backendCpuUs(pid) {
  const f = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
  const rest = f.slice(f.lastIndexOf(')') + 2).split(' ');
  return (Number(rest[11]) + Number(rest[12])) * TICK_US; // utime + stime
}

let seq = 0;

/** The stream entries of one job's three transitions (lua/includes/emit.lua's header), as the writer reads them. */
function jobEntries(id, now) {
  const q = 'emails';
  const entry = (ms, flat) => ({ queue: q, id: `${ms}-${seq++}`, fields: entryFields(flat) });
  return {
    enqueued: entry(now, ['h', `enqueued||waiting|0|${now}|${id}|||0||${OPTS}`, 'ty', 'emails.send', 'p', '{"to":"a@example.com","n":12}']),
    claimed: entry(now + 1, ['h', `claimed|waiting|active|1|${now + 1}|${id}|1|`, 'w', 'w1']),
    completed: entry(now + 2, ['h', `completed|active|completed|1|${now + 2}|${id}|1|1`, 'w', 'w1', 'd', '{"ok":true}']),
  };
}

/** A timeline line per entry: "event|from|to|attempt|at|x|worker|streamId" (the compact form the row and append models store). */
function line(e) {
  const f = e.fields;
  return `${f.e}|${f.f}|${f.t}|${f.a}|${f.at}|${f.x ?? ''}|${f.w ?? ''}|${e.id}`;
}

/** One statement for sendBatch: `$n` are array literals (src/postgres/pg-array.ts), as the writer's own. */
const st = (sql, params) => ({ sql, params });
const send = (ds, plan) => sendBatch(ds, batchMessage(plan));
const TIMELINE_INSERT = `INSERT INTO xm_timeline (job_id, stream_id, lines) SELECT * FROM unnest($1::uuid[], $2::text[], $3::text[])`;

/** The candidate models' statements for a batch of entries. */
const candidates = {
  /** The jobs rows COPYed as today (the writer's own plan), the enqueued event the model's way, in one message. */
  async enqueue(ds, model, entries) {
    const plan = planBatch({ ...project(entries), events: [] }, true);
    if (model === 'row') {
      // The same COPY with the timeline as one more column (the rows are in the entries' order; the lines hold no tab or backslash).
      for (const p of plan) {
        if (!p.sql.startsWith('COPY jobs')) continue;
        p.sql = p.sql.replace(') FROM STDIN', ', timeline) FROM STDIN');
        const rows = p.copy.split('\n');
        p.copy = entries.map((e, i) => `${rows[i]}\t${line(e)}`).join('\n') + '\n';
      }
    } else {
      plan.push(st(TIMELINE_INSERT, [textArray(entries.map((e) => e.fields.j)), textArray(entries.map((e) => e.id)), textArray(entries.map(line))]));
    }
    await send(ds, plan);
  },
  /** Processing: one row write per job per batch (row: an UPDATE of its jobs row; append: one timeline row). */
  async process(ds, model, entries) {
    project(entries); // the entries parsed and checked as the writer does, so the Node figures compare
    const byJob = new Map();
    for (const e of entries) {
      const g = byJob.get(e.fields.j) ?? [];
      g.push(e);
      byJob.set(e.fields.j, g);
    }
    const ids = [...byJob.keys()];
    const lines = ids.map((id) => byJob.get(id).map(line).join('\n'));
    if (model === 'append') {
      await send(ds, [st(TIMELINE_INSERT, [textArray(ids), textArray(ids.map((id) => byJob.get(id).at(-1).id)), textArray(lines)])]);
      return;
    }
    const last = ids.map((id) => byJob.get(id).at(-1).fields);
    const first = ids.map((id) => byJob.get(id)[0].fields);
    await send(ds, [
      st(
        `UPDATE jobs j SET status = u.s, attempts = u.a, worker_id = u.w, updated_at = to_timestamp(u.at / 1000.0),
                started_at = CASE WHEN u.st IS NULL THEN j.started_at ELSE to_timestamp(u.st / 1000.0) END,
                finished_at = CASE WHEN u.s = 'completed' THEN to_timestamp(u.at / 1000.0) ELSE j.finished_at END,
                timeline = j.timeline || E'\\n' || u.tl, last_event_ms = u.sm, last_event_seq = u.ss
         FROM unnest($1::uuid[], $2::text[], $3::int[], $4::text[], $5::float8[], $6::float8[], $7::text[], $8::bigint[], $9::bigint[])
           AS u(id, s, a, w, at, st, tl, sm, ss)
         WHERE j.id = u.id AND (j.last_event_ms, j.last_event_seq) < (u.sm, u.ss)`,
        [
          textArray(ids),
          textArray(last.map((f) => f.t)),
          numArray(last.map((f) => f.a)),
          textArray(last.map((f) => f.w ?? null)),
          numArray(last.map((f) => f.at)),
          numArray(first.map((f) => (f.e === 'claimed' ? f.at : null))),
          textArray(lines),
          numArray(ids.map((id) => byJob.get(id).at(-1).id.split('-')[0])),
          numArray(ids.map((id) => byJob.get(id).at(-1).id.split('-')[1])),
        ],
      ),
    ]);
  },
};

/** Writes one batch of entries the model's way. `phase` is enqueue or process. */
async function write(ds, model, phase, entries) {
  // Fresh, as the writer's loop writes entries it reads for the first time (XREADGROUP '>'); --replayed: the idempotent form of takeovers and replays.
  if (model === 'today') return writeBatch(ds, project(entries), !REPLAYED);
  return candidates[phase](ds, model, entries);
}

/** The batches of one shape: enqueue batches, then processing batches (together or split). */
function workload(shape) {
  const now = Date.now();
  const jobs = [];
  for (let i = 0; i < JOBS; i++) jobs.push(jobEntries(v7(now), now));
  const enqueue = [];
  for (let i = 0; i < JOBS; i += BATCH) enqueue.push(jobs.slice(i, i + BATCH).map((j) => j.enqueued));
  const processing = [];
  if (shape === 'together') {
    for (let i = 0; i < JOBS; i += BATCH) processing.push(jobs.slice(i, i + BATCH).flatMap((j) => [j.claimed, j.completed]));
  } else {
    // Each batch: the previous slice's completions and this slice's claims.
    for (let i = 0; i <= JOBS; i += BATCH) {
      const prev = i > 0 ? jobs.slice(i - BATCH, i).map((j) => j.completed) : [];
      processing.push([...prev, ...jobs.slice(i, i + BATCH).map((j) => j.claimed)]);
    }
  }
  return { enqueue, processing: processing.filter((b) => b.length) };
}

async function measure(ds, pid, model, batches) {
  const pg0 = backendCpuUs(pid);
  let node = 0;
  for (const b of batches) {
    const c = process.cpuUsage();
    const p = write(ds, model, batches.phase, b);
    const d = process.cpuUsage(c);
    node += d.user + d.system;
    await p;
  }
  return { pg: (backendCpuUs(pid) - pg0) / JOBS, node: node / JOBS };
}

async function main() {
  const db = `sluice_bench_models_${process.pid}`;
  const admin = createDataSource(PG_BASE, 1);
  await admin.initialize();
  await admin.query(`CREATE DATABASE "${db}"`);
  await admin.destroy();
  const url = new URL(PG_BASE);
  url.pathname = `/${db}`;
  const ds = createDataSource(url.toString(), 1);
  await ds.initialize();
  const results = {};
  try {
    await ds.runMigrations();
    await ds.query(`ALTER TABLE jobs ADD COLUMN timeline text`);
    await ds.query(`CREATE TABLE xm_timeline (job_id uuid NOT NULL, stream_id text NOT NULL, lines text NOT NULL, PRIMARY KEY (job_id, stream_id))`);
    if (SETUP_SQL) await ds.query(SETUP_SQL);
    const [{ pid }] = await ds.query(`SELECT pg_backend_pid() AS pid`);
    console.log(`# ${JOBS} jobs per round, batches of ${BATCH} jobs, ${ROUNDS} rounds; database ${db} on ${url.host}; backend pid ${pid}`);
    for (let r = 1; r <= ROUNDS; r++) {
      for (const shape of SHAPES) {
        for (const model of r % 2 ? MODELS : [...MODELS].reverse()) {
          const w = workload(shape);
          w.enqueue.phase = 'enqueue';
          w.processing.phase = 'process';
          const enq = await measure(ds, pid, model, w.enqueue);
          const proc = await measure(ds, pid, model, w.processing);
          const k = `${model} ${shape}`;
          (results[k] ??= []).push({ enq, proc });
          console.log(`round ${r} ${k.padEnd(15)} enqueue pg ${enq.pg.toFixed(1)} node ${enq.node.toFixed(1)} · processing pg ${proc.pg.toFixed(1)} node ${proc.node.toFixed(1)} µs/job`);
        }
      }
      await ds.query(`VACUUM ANALYZE`);
    }
  } finally {
    await ds.destroy();
    await dropDatabase(url.toString());
  }
  console.log('\n| model | shape | enqueue: PostgreSQL | enqueue: writer (Node) | processing: PostgreSQL | processing: writer (Node) | PostgreSQL per job, both |');
  console.log('|---|---|---:|---:|---:|---:|---:|');
  for (const [k, rs] of Object.entries(results)) {
    const [model, shape] = k.split(' ');
    const m = (f) => median(rs.map(f));
    console.log(`| ${model} | ${shape} | ${m((x) => x.enq.pg).toFixed(1)} | ${m((x) => x.enq.node).toFixed(1)} | ${m((x) => x.proc.pg).toFixed(1)} | ${m((x) => x.proc.node).toFixed(1)} | ${m((x) => x.enq.pg + x.proc.pg).toFixed(1)} |`);
  }
  console.log('(µs of CPU per job, medians over rounds; PostgreSQL = the one backend the writes use, from /proc; Node = building the statements in this process)');
}

main().catch((e) => {
  console.error(e.stack || e.message);
  process.exit(1);
});
