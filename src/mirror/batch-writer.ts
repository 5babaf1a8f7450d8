import type { DataSource, EntityManager } from 'typeorm';
import { copyNumber, copyText, copyTime } from '../postgres/copy-text';
import { numArray, textArray } from '../postgres/pg-array';
import { BatchMessage, sendBatch } from '../postgres/pg-batch';
import type { DependencyRow, MirrorBatch, EventRow, ExecutionEnd, ExecutionStart, JobInsert, JobPatch, LogRow } from './projection';

/** Bits of JobPatch.mask: which columns a patch sets (others stay as they are). */
const PATCH_COLUMNS = [
  'status', 'attempts', 'workerId', 'executionSeq', 'startedAt', 'finishedAt', 'runAt', 'lastError', 'result', 'progress', 'payload',
  'type', 'priority', 'maxAttempts', 'timeoutMs', 'backoff', 'concurrencyKey',
] as const;

const ts = (col: string) => `to_timestamp(${col} / 1000.0)`;

function dedupe<T>(rows: T[], key: (r: T) => string): T[] {
  const m = new Map<string, T>();
  for (const r of rows) m.set(key(r), r);
  return [...m.values()];
}

/**
 * One statement of a batch: its parameters already encoded as array
 * literals (src/postgres/pg-array.ts), or, for a `COPY … FROM STDIN`, no
 * parameters and its rows in `copy` (text format, src/postgres/copy-text.ts).
 */
export interface PlannedStatement {
  sql: string;
  params: string[];
  copy?: string;
}

/**
 * Writes one projected batch with {@link batchMessage} — the same single
 * message the mirror writer sends — through `m` (a DataSource: one
 * implicit transaction; or an EntityManager inside the caller's transaction).
 * Idempotent unless `fresh`: events and logs are keyed by their stream
 * entry id; job rows change only for events newer than the newest one they hold.
 * @throws whatever PostgreSQL answers (nothing of the batch is written).
 */
export async function writeBatch(m: DataSource | EntityManager, b: MirrorBatch, fresh = false): Promise<void> {
  await sendBatch(m, batchMessage(planBatch(b, fresh)));
}

/** A plan as the message src/postgres/pg-batch.ts sends: {@link batchScript}, and the data of its COPY statements in order. */
export function batchMessage(plan: PlannedStatement[]): BatchMessage {
  const copies: Buffer[] = [];
  for (const st of plan) if (st.copy !== undefined) copies.push(Buffer.from(st.copy, 'utf8'));
  return { text: batchScript(plan), copies };
}

/** PostgreSQL's SQLSTATE for a duplicate key (manual, appendix A). */
export const UNIQUE_VIOLATION = '23505';

/**
 * Index lookups for the few hundred rows a batch touches: with the jobs
 * table still small (≲ 100k rows) the planner prefers a sequential scan and
 * hash join per statement, a cost that grows with the table (seen at 30k
 * rows: 20 of the 31 ms of a 600-row UPDATE). Transaction-local.
 */
const JOIN_SETTINGS = 'SET LOCAL enable_hashjoin = off; SET LOCAL enable_mergejoin = off';

/**
 * The whole batch as one query string: {@link JOIN_SETTINGS} then every
 * statement, each `$n` replaced by its parameter as a dollar-quoted literal
 * `$sluice$…$sluice$` (PostgreSQL manual 4.1.2.4: no escaping inside). The
 * parameters are array literals from src/postgres/pg-array.ts, which escapes
 * every `$` in text as `\$`, so none can hold the tag (checked anyway).
 * A COPY statement goes in as it is; its rows travel after the query
 * (batchMessage, src/postgres/pg-batch.ts). Sent with the simple query
 * protocol, a multi-statement string runs as one implicit transaction — all
 * of it commits or none (manual 55.2.2.1) — in one round trip, so
 * PostgreSQL never waits for Node between statements while Node is busy
 * preparing the next batch. Must be sent without parameters.
 */
export function batchScript(plan: PlannedStatement[]): string {
  // One join over every piece: a single allocation of the final string,
  // where `+=` per piece built a rope that the socket write then flattened.
  const parts = [JOIN_SETTINGS];
  for (const st of plan) {
    const t = template(st.sql);
    parts.push(';\n', t.text[0]);
    for (let i = 0; i < t.param.length; i++) {
      const n = t.param[i];
      const v = st.params[n - 1];
      // textArray escapes every `$` as `\$` (so `e$` never occurs) and numbers have none: the fixed tag cannot occur in v.
      if (v === undefined || v.charCodeAt(0) !== 123 || v.charCodeAt(v.length - 1) !== 125 || v.includes('$sluice$')) {
        throw new Error(`batchScript: parameter $${n} is not an array literal (or holds the tag)`);
      }
      parts.push('$sluice$', v, '$sluice$', t.text[i + 1]);
    }
  }
  return parts.join('');
}

/** A statement's text split at its `$n` placeholders: text[0], param[0], text[1], … */
interface Template {
  text: string[];
  param: number[];
}

/** Split statements by text: the statements are a few fixed strings, split once (a regex per batch was ~5 % of the writer's CPU). */
const templates = new Map<string, Template>();

function template(sql: string): Template {
  let t = templates.get(sql);
  if (!t) {
    const pieces = sql.split(/\$(\d+)/);
    t = { text: pieces.filter((_, i) => i % 2 === 0), param: pieces.filter((_, i) => i % 2 === 1).map(Number) };
    if (templates.size < 64) templates.set(sql, t);
  }
  return t;
}

/*
 * COPY data of a fresh batch's inserts, one function per table, each field
 * encoded by src/postgres/copy-text.ts, in the column order of its COPY
 * statement. Written out per table rather than as a list of column getters:
 * one `+` chain per row is about twice as fast as calling a getter per field
 * and joining an array of the pieces (a micro-benchmark of 1,000 events:
 * 1.0 vs 2.0 ms with the UTF-8 encoding included).
 */

const EVENT_COPY_SQL =
  'COPY job_events (queue, stream_ms, stream_seq, job_id, at, event, from_status, to_status, attempt, execution_seq, worker_id, reason, error, data) FROM STDIN';

function eventRows(rows: EventRow[]): string {
  let s = '';
  for (const r of rows) {
    s += copyText(r.queue) + '\t' + r.streamMs + '\t' + r.streamSeq + '\t' + copyText(r.jobId) + '\t' + copyTime(r.at) + '\t' + copyText(r.event) + '\t' +
      copyText(r.from) + '\t' + copyText(r.to) + '\t' + copyNumber(r.attempt) + '\t' + copyNumber(r.executionSeq) + '\t' + copyText(r.workerId) + '\t' +
      copyText(r.reason) + '\t' + copyText(r.error) + '\t' + copyText(r.data) + '\n';
  }
  return s;
}

const LOG_COPY_SQL = 'COPY job_logs (queue, stream_ms, stream_seq, job_id, at, attempt, level, message) FROM STDIN';

function logRows(rows: LogRow[]): string {
  let s = '';
  for (const r of rows) {
    s += copyText(r.queue) + '\t' + r.streamMs + '\t' + r.streamSeq + '\t' + copyText(r.jobId) + '\t' + copyTime(r.at) + '\t' + copyNumber(r.attempt) + '\t' +
      copyText(r.level) + '\t' + copyText(r.message) + '\n';
  }
  return s;
}

const JOB_COPY_SQL = `COPY jobs (id, queue, type, status, priority, attempts, max_attempts, backoff, timeout_ms, idempotency_key, payload, execution_seq,
                   created_at, run_at, updated_at, last_event_ms, last_event_seq, worker_id, started_at, finished_at, last_error, result, progress,
                   concurrency_key, flow_id, flow_ref, on_dependency_failure) FROM STDIN`;

function jobRows(rows: JobInsert[]): string {
  let s = '';
  for (const r of rows) {
    s += copyText(r.id) + '\t' + copyText(r.queue) + '\t' + copyText(r.type) + '\t' + copyText(r.status) + '\t' + copyNumber(r.priority) + '\t' +
      copyNumber(r.attempts) + '\t' + copyNumber(r.maxAttempts) + '\t' + copyText(r.backoff) + '\t' + copyNumber(r.timeoutMs) + '\t' +
      copyText(r.idempotencyKey) + '\t' + copyText(r.payload) + '\t' + copyNumber(r.executionSeq) + '\t' + copyTime(r.createdAt) + '\t' +
      copyTime(r.runAt) + '\t' + copyTime(r.updatedAt) + '\t' + r.streamMs + '\t' + r.streamSeq + '\t' + copyText(r.workerId) + '\t' +
      copyTime(r.startedAt) + '\t' + copyTime(r.finishedAt) + '\t' + copyText(r.lastError) + '\t' + copyText(r.result) + '\t' + copyText(r.progress) + '\t' +
      copyText(r.concurrencyKey) + '\t' + copyText(r.flowId) + '\t' + copyText(r.flowRef) + '\t' + copyText(r.onDependencyFailure) + '\n';
  }
  return s;
}

const DEPENDENCY_COPY_SQL = 'COPY job_dependencies (job_id, depends_on_id, flow_id, ref, queue) FROM STDIN';

function dependencyRows(rows: DependencyRow[]): string {
  let s = '';
  for (const r of rows) s += copyText(r.jobId) + '\t' + copyText(r.dependsOnId) + '\t' + copyText(r.flowId) + '\t' + copyText(r.ref) + '\t' + copyText(r.queue) + '\n';
  return s;
}

const START_COPY_SQL = 'COPY job_executions (job_id, execution_seq, queue, attempt, worker_id, started_at, outcome, claim_ms, claim_seq) FROM STDIN';

/** The columns an execution's start and end rows share: job_id, execution_seq, queue, attempt, worker_id, started_at. */
function executionHead(r: ExecutionStart): string {
  return copyText(r.jobId) + '\t' + copyNumber(r.executionSeq) + '\t' + copyText(r.queue) + '\t' + copyNumber(r.attempt) + '\t' + copyText(r.workerId) + '\t' +
    copyTime(r.startedAt);
}

function startRows(rows: ExecutionStart[]): string {
  let s = '';
  for (const r of rows) s += executionHead(r) + '\trunning\t' + copyNumber(r.claimMs) + '\t' + copyNumber(r.claimSeq) + '\n';
  return s;
}

const EXECUTION_COPY_SQL =
  'COPY job_executions (job_id, execution_seq, queue, attempt, worker_id, started_at, finished_at, outcome, error, duration_ms, claim_ms, claim_seq, end_ms, end_seq, result) FROM STDIN';

function executionRows(rows: ExecutionEnd[]): string {
  let s = '';
  for (const r of rows) {
    s += executionHead(r) + '\t' + copyTime(r.finishedAt) + '\t' + copyText(r.outcome) + '\t' + copyText(r.error) + '\t' + copyNumber(r.durationMs) + '\t' +
      copyNumber(r.claimMs) + '\t' + copyNumber(r.claimSeq) + '\t' + copyNumber(r.endMs) + '\t' + copyNumber(r.endSeq) + '\t' + copyText(r.result) + '\n';
  }
  return s;
}

const copyOf = (sql: string, copy: string): PlannedStatement => ({ sql, params: [], copy });

/**
 * The statements that write a projected batch, in order, with their
 * parameters encoded. Pure: the mirror writer runs it for the next batch
 * while the current one is in PostgreSQL.
 *
 * `fresh`: the batch's entries were never delivered before (read with
 * XREADGROUP `>`), so none of their event or log rows can exist, nor the
 * job row of an `enqueued` event (job ids are UUIDv7s made by the server),
 * nor the execution row of a `claimed` event, unless Redis came back from
 * an older snapshot and delivers mirrored entries again: those rows then
 * go in with plain `COPY` (src/postgres/copy-text.ts), without the executor
 * work of an INSERT from unnest nor ON CONFLICT's speculative insertion (an
 * index probe, then the insert, then its confirmation). An execution that
 * ended in the batch but started in an earlier one keeps its upsert. Should
 * a row exist all the same, the statement fails with
 * {@link UNIQUE_VIOLATION}, nothing of the batch is written, and the caller
 * writes it again with `fresh = false` (the idempotent form).
 */
export function planBatch(b: MirrorBatch, fresh = false): PlannedStatement[] {
  const out: PlannedStatement[] = [];
  const onEntry = 'ON CONFLICT (job_id, stream_ms, stream_seq) DO NOTHING';
  const txt = <T>(rows: T[], f: (r: T) => string | null | undefined) => textArray(rows.map(f));
  const num = <T>(rows: T[], f: (r: T) => number | string | null | undefined) => numArray(rows.map(f));
  const starts = dedupe(b.starts, (r) => `${r.jobId}/${r.executionSeq}`);
  const ends = dedupe(b.ends, (r) => `${r.jobId}/${r.executionSeq}`);
  const held = heldEntries(starts, ends);
  // Held events go in their execution's row (the view job_timeline shows them); every copy of one in the batch
  // is held (a replay can bring an entry twice). One a row could hold but this batch does not may be held by its
  // row already (a replay grouped otherwise): it goes in through unheldEvents, which looks first. Events no row
  // ever holds (EventRow.folded unset) are job_events rows.
  const events: EventRow[] = [];
  const unheld: EventRow[] = [];
  for (const e of b.events) {
    if (e.folded !== true) events.push(e);
    else if (!held.has(entryKey(e))) unheld.push(e);
  }
  if (events.length && fresh) out.push(copyOf(EVENT_COPY_SQL, eventRows(events)));
  else if (events.length) out.push(insertEvents(events));
  if (b.logs.length && fresh) out.push(copyOf(LOG_COPY_SQL, logRows(b.logs)));
  else if (b.logs.length) {
    const l = b.logs;
    out.push({
      sql: `INSERT INTO job_logs (queue, stream_ms, stream_seq, job_id, at, attempt, level, message)
       SELECT q, sm, ss, j, ${ts('at')}, a, lv, msg
       FROM unnest($1::text[], $2::bigint[], $3::bigint[], $4::uuid[], $5::float8[], $6::int[], $7::text[], $8::text[]) AS u(q, sm, ss, j, at, a, lv, msg)
       ${onEntry}`,
      params: [
        txt(l, (r) => r.queue), num(l, (r) => r.streamMs), num(l, (r) => r.streamSeq), txt(l, (r) => r.jobId), num(l, (r) => r.at), num(l, (r) => r.attempt),
        txt(l, (r) => r.level), txt(l, (r) => r.message),
      ],
    });
  }
  if (b.inserts.length) {
    const i = dedupe(b.inserts, (r) => r.id);
    if (fresh) out.push(copyOf(JOB_COPY_SQL, jobRows(i)));
    else {
      // A row that already exists is brought forward like a patch would be (the
      // insert may carry later events of the batch, folded in by the projection).
      out.push({
        sql: `INSERT INTO jobs AS j (id, queue, type, status, priority, attempts, max_attempts, backoff, timeout_ms, idempotency_key, payload,
                           execution_seq, created_at, run_at, updated_at, last_event_ms, last_event_seq,
                           worker_id, started_at, finished_at, last_error, result, progress, concurrency_key, flow_id, flow_ref, on_dependency_failure)
         SELECT id, q, ty, s, pr, a, ma, bo, tm, ik, p, x, ${ts('ca')}, ${ts('ra')}, ${ts('ua')}, sm, ss,
                w, ${ts('sa')}, ${ts('fa')}, er, r, pg, ck, fl, rf, fp
         FROM unnest($1::uuid[], $2::text[], $3::text[], $4::text[], $5::int[], $6::int[], $7::text[], $8::int[], $9::text[], $10::text[],
                     $11::float8[], $12::float8[], $13::bigint[], $14::bigint[], $15::int[], $16::int[], $17::float8[], $18::text[],
                     $19::float8[], $20::float8[], $21::text[], $22::text[], $23::text[], $24::text[], $25::uuid[], $26::text[], $27::text[])
           AS u(id, q, ty, s, pr, ma, bo, tm, ik, p, ca, ra, sm, ss, a, x, ua, w, sa, fa, er, r, pg, ck, fl, rf, fp)
         ${JOB_UPSERT}`,
        params: [
          txt(i, (r) => r.id), txt(i, (r) => r.queue), txt(i, (r) => r.type), txt(i, (r) => r.status), num(i, (r) => r.priority), num(i, (r) => r.maxAttempts),
          txt(i, (r) => r.backoff), num(i, (r) => r.timeoutMs), txt(i, (r) => r.idempotencyKey), txt(i, (r) => r.payload), num(i, (r) => r.createdAt),
          num(i, (r) => r.runAt), num(i, (r) => r.streamMs), num(i, (r) => r.streamSeq), num(i, (r) => r.attempts), num(i, (r) => r.executionSeq),
          num(i, (r) => r.updatedAt), txt(i, (r) => r.workerId), num(i, (r) => r.startedAt), num(i, (r) => r.finishedAt), txt(i, (r) => r.lastError),
          txt(i, (r) => r.result), txt(i, (r) => r.progress), txt(i, (r) => r.concurrencyKey),
          txt(i, (r) => r.flowId), txt(i, (r) => r.flowRef), txt(i, (r) => r.onDependencyFailure),
        ],
      });
    }
  }
  if (b.dependencies.length) {
    // A flow job's edges, written with its row (same transaction), once each:
    // never updated, so a replay of its enqueued entry finds them and adds nothing.
    const d = b.dependencies;
    if (fresh) out.push(copyOf(DEPENDENCY_COPY_SQL, dependencyRows(d)));
    else {
      out.push({
        sql: `INSERT INTO job_dependencies (job_id, depends_on_id, flow_id, ref, queue)
         SELECT j, d, fl, rf, q FROM unnest($1::uuid[], $2::uuid[], $3::uuid[], $4::text[], $5::text[]) AS u(j, d, fl, rf, q)
         ON CONFLICT (job_id, depends_on_id) DO NOTHING`,
        params: [txt(d, (r) => r.jobId), txt(d, (r) => r.dependsOnId), txt(d, (r) => r.flowId), txt(d, (r) => r.ref), txt(d, (r) => r.queue)],
      });
    }
  }
  if (b.patches.length) out.push(planPatches(b.patches));
  const tops = streamTops(b);
  if (tops.length) {
    // The newest entry per queue (restore and the loss watch read it: src/restore); only ever moved forward.
    out.push({
      sql: `INSERT INTO queue_stream_tops AS t (queue, stream_ms, stream_seq)
       SELECT q, sm, ss FROM unnest($1::text[], $2::bigint[], $3::bigint[]) AS u(q, sm, ss)
       ON CONFLICT (queue) DO UPDATE SET stream_ms = EXCLUDED.stream_ms, stream_seq = EXCLUDED.stream_seq
       WHERE (t.stream_ms, t.stream_seq) < (EXCLUDED.stream_ms, EXCLUDED.stream_seq)`,
      params: [textArray(tops.map((t) => t.queue)), numArray(tops.map((t) => t.ms)), numArray(tops.map((t) => t.seq))],
    });
  }
  // Held events written by an upsert below, which may find the row holding another claim or end (see heldRule): checked after.
  const checked: EventRow[] = unheld;
  if (starts.length) {
    const s = starts;
    if (fresh) out.push(copyOf(START_COPY_SQL, startRows(s)));
    else {
      // A row its end wrote first (replays, older batches after newer ones) takes the claim's time, and the duration
      // from it (an end without `ms` — failed, stalled, released — had only its own time), unless it holds a claim already.
      out.push({
        sql: `INSERT INTO job_executions AS je (job_id, execution_seq, queue, attempt, worker_id, started_at, outcome, claim_ms, claim_seq)
         SELECT j, x, q, a, w, ${ts('sa')}, 'running', cm, cs
         FROM unnest($1::uuid[], $2::int[], $3::text[], $4::int[], $5::text[], $6::float8[], $7::bigint[], $8::bigint[]) AS u(j, x, q, a, w, sa, cm, cs)
         ON CONFLICT (job_id, execution_seq) DO UPDATE SET
           ${heldSet('claim', ['claim_ms', 'claim_seq'])},
           started_at = EXCLUDED.started_at,
           duration_ms = CASE WHEN je.finished_at IS NULL THEN je.duration_ms
             ELSE round(extract(epoch FROM je.finished_at - EXCLUDED.started_at) * 1000)::int END
         WHERE je.claim_ms IS NULL`,
        params: [
          txt(s, (r) => r.jobId), num(s, (r) => r.executionSeq), txt(s, (r) => r.queue), num(s, (r) => r.attempt), txt(s, (r) => r.workerId),
          num(s, (r) => r.startedAt), num(s, (r) => r.claimMs), num(s, (r) => r.claimSeq),
        ],
      });
      for (const r of s) if (r.claimEvent) checked.push(r.claimEvent);
    }
  }
  if (ends.length) {
    // Started in this fresh batch: its row cannot exist yet, the end row is the whole execution.
    const whole = fresh ? ends.filter((r) => r.startInBatch) : [];
    const e = whole.length ? ends.filter((r) => !r.startInBatch) : ends;
    if (whole.length) out.push(copyOf(EXECUTION_COPY_SQL, executionRows(whole)));
    if (e.length) {
      // An end rewrites the row unless the row already holds another execution's `completed` (only after Redis came back rewound).
      out.push({
        sql: `INSERT INTO job_executions AS je (job_id, execution_seq, queue, attempt, worker_id, started_at, finished_at, outcome, error, duration_ms,
                                   claim_ms, claim_seq, end_ms, end_seq, result)
         SELECT j, x, q, a, w, ${ts('sa')}, ${ts('fa')}, o, er, d, cm, cs, em, es, r
         FROM unnest($1::uuid[], $2::int[], $3::text[], $4::int[], $5::text[], $6::float8[], $7::float8[], $8::text[], $9::text[], $10::int[],
                     $11::bigint[], $12::bigint[], $13::bigint[], $14::bigint[], $15::text[])
           AS u(j, x, q, a, w, sa, fa, o, er, d, cm, cs, em, es, r)
         ON CONFLICT (job_id, execution_seq) DO UPDATE SET
           finished_at = EXCLUDED.finished_at, outcome = EXCLUDED.outcome, error = EXCLUDED.error,
           duration_ms = COALESCE(EXCLUDED.duration_ms, round(extract(epoch FROM EXCLUDED.finished_at - je.started_at) * 1000)::int),
           started_at = CASE WHEN je.claim_ms IS NULL AND EXCLUDED.claim_ms IS NOT NULL THEN EXCLUDED.started_at ELSE je.started_at END,
           ${heldSet('claim', ['claim_ms', 'claim_seq'])},
           ${heldSet('end', ['end_ms', 'end_seq', 'result'])}
         WHERE je.end_ms IS NULL OR (je.end_ms, je.end_seq) = (EXCLUDED.end_ms, EXCLUDED.end_seq)`,
        params: [
          txt(e, (r) => r.jobId), num(e, (r) => r.executionSeq), txt(e, (r) => r.queue), num(e, (r) => r.attempt), txt(e, (r) => r.workerId),
          num(e, (r) => r.startedAt), num(e, (r) => r.finishedAt), txt(e, (r) => r.outcome), txt(e, (r) => r.error), num(e, (r) => r.durationMs),
          num(e, (r) => r.claimMs), num(e, (r) => r.claimSeq), num(e, (r) => r.endMs), num(e, (r) => r.endSeq), txt(e, (r) => r.result),
        ],
      });
      for (const r of e) {
        if (r.claimEvent && r.claimMs !== null) checked.push(r.claimEvent);
        if (r.endEvent) checked.push(r.endEvent);
      }
    }
  }
  if (checked.length) out.push(unheldEvents(checked));
  if (b.dlq.length) {
    // The DLQ follows the projection (already patched above, and only ever
    // moved forward by newer events): a job is in it exactly while its newest
    // known state is 'failed', with that failure's error. Taking the row from
    // the batch's own events instead would let a replayed older batch re-add
    // a job that was retried since, delete the row of a newer failure, or
    // overwrite it with an older error.
    // The payload and type come from the projection, so the copy survives pruning of the job.
    // Each id is looked up (by primary key, partitions pruned per id at run
    // time) from the batch's side: `OFFSET 0` keeps the planner from turning
    // the lateral lookup into a join and NOT EXISTS into an anti-join, which
    // it planned as a scan of every failed job and every `purged` event of
    // the history (test/integration/mirror/writer-plans.test.ts).
    // A purged job stays 'failed' in `jobs` but leaves the DLQ for good (its
    // Redis hash is gone, so it can never be retried): a `purged` event in
    // the audit table keeps a replayed older failure from re-adding it.
    const ids = txt(b.dlq, (d) => d.jobId);
    const purged = txt(b.dlq.filter((d) => d.purged), (d) => d.jobId);
    out.push({
      sql: `DELETE FROM dead_letter_jobs d WHERE d.job_id = ANY($1::uuid[])
         AND (d.job_id = ANY($2::uuid[]) OR NOT EXISTS (SELECT 1 FROM jobs j WHERE j.id = d.job_id AND j.status = 'failed'))`,
      params: [ids, purged],
    });
    // The fingerprint was computed from the failure's own error (projection): it is
    // stored only when that error is the one the projection holds; an older failure
    // replayed over a newer one keeps the stored fingerprint of the newer one.
    out.push({
      sql: `INSERT INTO dead_letter_jobs AS dl (job_id, queue, type, payload, last_error, attempts, failed_at, fingerprint)
       SELECT j.id, j.queue, j.type, j.payload, j.last_error, j.attempts, COALESCE(j.finished_at, j.updated_at),
         CASE WHEN j.last_error IS NOT DISTINCT FROM u.er THEN u.fp END
       FROM unnest($1::uuid[], $2::text[], $3::text[]) AS u(id, fp, er)
         CROSS JOIN LATERAL (SELECT * FROM jobs j WHERE j.id = u.id AND j.status = 'failed' OFFSET 0) j
       WHERE NOT EXISTS (SELECT 1 FROM job_events e WHERE e.job_id = u.id AND e.event = 'purged' OFFSET 0)
       ON CONFLICT (job_id) DO UPDATE SET payload = EXCLUDED.payload, last_error = EXCLUDED.last_error,
         attempts = EXCLUDED.attempts, failed_at = EXCLUDED.failed_at,
         fingerprint = COALESCE(EXCLUDED.fingerprint, CASE WHEN dl.last_error IS NOT DISTINCT FROM EXCLUDED.last_error THEN dl.fingerprint END)`,
      params: [ids, txt(b.dlq, (d) => d.fingerprint), txt(b.dlq, (d) => d.lastError)],
    });
  }
  return out;
}

/** A stream entry's identity within a batch: its queue and id (`ms-seq`). */
const entryKey = (e: { queue: string; streamMs: string; streamSeq: string }) => `${e.queue} ${e.streamMs}-${e.streamSeq}`;

/**
 * The stream entries the batch's execution rows are to hold (EventRow.folded):
 * the claims and completions of the rows written, after dedupe — an
 * execution's claim dropped there (a second claim of the same execution, after
 * Redis came back rewound) is not held by this batch, and goes through
 * {@link unheldEvents}.
 */
function heldEntries(starts: ExecutionStart[], ends: ExecutionEnd[]): Set<string> {
  const held = new Set<string>();
  for (const s of starts) if (s.claimEvent && s.claimMs !== null) held.add(entryKey(s.claimEvent));
  for (const e of ends) {
    if (e.claimEvent && e.claimMs !== null) held.add(entryKey(e.claimEvent));
    if (e.endEvent && e.endMs !== null) held.add(entryKey(e.endEvent));
  }
  return held;
}

/**
 * When an upsert may store a held event's stream id in an existing
 * execution row (`je`; `EXCLUDED` the batch's row): the row holds no such
 * event yet, the view would give the event back as it was — the same
 * worker and attempt as the row's — and the event is not a job_events row
 * already (history written before the folded model, replayed by a writer
 * after the upgrade; or an event {@link unheldEvents} wrote): the probe of
 * job_events' key comes last, so only rows that pass the rest pay it.
 * Otherwise the event stays out of the row and {@link unheldEvents} writes
 * it as a job_events row (or finds it there).
 */
function heldRule(kind: 'claim' | 'end'): string {
  return `(je.${kind}_ms IS NULL AND EXCLUDED.${kind}_ms IS NOT NULL AND je.worker_id IS NOT DISTINCT FROM EXCLUDED.worker_id AND je.attempt = EXCLUDED.attempt
    AND NOT EXISTS (SELECT 1 FROM job_events ev WHERE ev.job_id = EXCLUDED.job_id AND ev.stream_ms = EXCLUDED.${kind}_ms AND ev.stream_seq = EXCLUDED.${kind}_seq))`;
}

/**
 * The SET of an upsert's `cols` (a claim's or an end's): the batch's values
 * when {@link heldRule} says the row takes the event, the row's own
 * otherwise; the rule (and its probe of job_events) evaluated once per row.
 */
function heldSet(kind: 'claim' | 'end', cols: string[]): string {
  const pick = cols.map((c) => `CASE WHEN k.h THEN EXCLUDED.${c} ELSE je.${c} END`).join(', ');
  return `(${cols.join(', ')}) = (SELECT ${pick} FROM (SELECT ${heldRule(kind)} AS h) k)`;
}

/**
 * Claims and completions that their execution row may or may not hold, as
 * job_events rows unless it does, so that job_timeline lists each exactly
 * once: the held events an upsert may have declined to store (the row held
 * another claim or end of the same execution — Redis rewound to an older
 * snapshot ran it again — or a different worker or attempt), and the claims
 * and completions this batch does not hold, which an earlier batch may have
 * stored in the row (a replay grouped otherwise: a claim and a completion by
 * different workers, two runs of one execution). Runs after every execution
 * statement of the batch. A lookup of each in the execution's primary key;
 * `OFFSET 0` keeps it a per-row probe (see the DLQ statement).
 */
function unheldEvents(ev: EventRow[]): PlannedStatement {
  return insertEvents(
    ev,
    `WHERE NOT EXISTS (SELECT 1 FROM job_executions je WHERE je.job_id = u.j AND je.execution_seq = u.x
       AND ((je.claim_ms = u.sm AND je.claim_seq = u.ss) OR (je.end_ms = u.sm AND je.end_seq = u.ss)) OFFSET 0)`,
  );
}

/**
 * The idempotent insert of event rows (a replay adds nothing: the key is the
 * stream entry), `where` filtering the batch's rows (`u`) first.
 */
function insertEvents(ev: EventRow[], where = ''): PlannedStatement {
  const txt = (f: (r: EventRow) => string | null) => textArray(ev.map(f));
  const num = (f: (r: EventRow) => number | string | null) => numArray(ev.map(f));
  return {
    sql: `INSERT INTO job_events (queue, stream_ms, stream_seq, job_id, at, event, from_status, to_status, attempt, execution_seq, worker_id, reason, error, data)
     SELECT q, sm, ss, j, ${ts('at')}, e, f, t, a, x, w, r, er, d
     FROM unnest($1::text[], $2::bigint[], $3::bigint[], $4::uuid[], $5::float8[], $6::text[], $7::text[], $8::text[], $9::int[], $10::int[], $11::text[],
                 $12::text[], $13::text[], $14::text[])
       AS u(q, sm, ss, j, at, e, f, t, a, x, w, r, er, d)
     ${where}
     ON CONFLICT (job_id, stream_ms, stream_seq) DO NOTHING`,
    params: [
      txt((r) => r.queue), num((r) => r.streamMs), num((r) => r.streamSeq), txt((r) => r.jobId), num((r) => r.at), txt((r) => r.event),
      txt((r) => r.from), txt((r) => r.to), num((r) => r.attempt), num((r) => r.executionSeq), txt((r) => r.workerId), txt((r) => r.reason),
      txt((r) => r.error), txt((r) => r.data),
    ],
  };
}

/**
 * The idempotent tail of the jobs insert: an existing row is brought forward only by newer events.
 * The spec columns (type, priority, options, concurrency key) too: a `debounced` event folded into the insert changes them.
 */
const JOB_UPSERT = `ON CONFLICT (id) DO UPDATE SET
         status = EXCLUDED.status, attempts = EXCLUDED.attempts, execution_seq = EXCLUDED.execution_seq, run_at = EXCLUDED.run_at,
         updated_at = EXCLUDED.updated_at, worker_id = EXCLUDED.worker_id, started_at = EXCLUDED.started_at,
         finished_at = EXCLUDED.finished_at, last_error = EXCLUDED.last_error, result = EXCLUDED.result,
         progress = EXCLUDED.progress, payload = EXCLUDED.payload,
         type = EXCLUDED.type, priority = EXCLUDED.priority, max_attempts = EXCLUDED.max_attempts,
         backoff = EXCLUDED.backoff, timeout_ms = EXCLUDED.timeout_ms, concurrency_key = EXCLUDED.concurrency_key,
         last_event_ms = EXCLUDED.last_event_ms, last_event_seq = EXCLUDED.last_event_seq
       WHERE (j.last_event_ms, j.last_event_seq) < (EXCLUDED.last_event_ms, EXCLUDED.last_event_seq)`;

/**
 * One UPDATE for all patches; a bit mask per row says which columns it sets.
 * Joined to `jobs` by id alone, so that the only plan left (hash and merge
 * joins are off: {@link JOIN_SETTINGS}) is a nested loop that looks each id up
 * in the primary key, the partitions pruned per id at run time. With the
 * batch's id span as well, the planner took the span for a cheap range scan
 * (a day partition without statistics is estimated at a few rows), scanned it
 * once and compared every row of the batch with every row of the range: 1,000
 * patches met 999,000 join-filter rejections, 54 µs per row instead of 12
 * (PostgreSQL 15, measured with EXPLAIN ANALYZE on the pipeline's batches).
 * Planning without the span costs ~1.4 ms a statement at 37 partitions.
 */
function planPatches(patches: JobPatch[]): PlannedStatement {
  const masks = patches.map((p) => PATCH_COLUMNS.reduce((acc, c, i) => (p[c] !== undefined ? acc | (1 << i) : acc), 0));
  const set = (i: number, col: string, val: string) => `${col} = CASE WHEN u.m & ${1 << i} <> 0 THEN ${val} ELSE j.${col} END`;
  // A column no patch of the batch sets is sent as '{}': unnest pads the shorter arrays with NULLs (manual 9.19,
  // unnest with several arguments), so it reads NULL for every row — as its mask bit says to ignore it — without
  // a NULL per row to build, send and parse (most of the 22 arrays, for a batch of claims and completions).
  const none = (v: readonly unknown[]) => v.every((x) => x === null || x === undefined);
  const txt = (f: (p: JobPatch) => string | null | undefined) => ((v) => (none(v) ? '{}' : textArray(v)))(patches.map(f));
  const num = (f: (p: JobPatch) => number | string | null | undefined) => ((v) => (none(v) ? '{}' : numArray(v)))(patches.map(f));
  return {
    sql: `UPDATE jobs j SET
       ${set(0, 'status', 'u.s')}, ${set(1, 'attempts', 'u.a')}, ${set(2, 'worker_id', 'u.w')}, ${set(3, 'execution_seq', 'u.x')},
       ${set(4, 'started_at', ts('u.sa'))}, ${set(5, 'finished_at', ts('u.fa'))}, ${set(6, 'run_at', ts('u.ra'))},
       ${set(7, 'last_error', 'u.er')}, ${set(8, 'result', 'u.r')}, ${set(9, 'progress', 'u.pg')}, ${set(10, 'payload', 'u.p')},
       ${set(11, 'type', 'u.ty')}, ${set(12, 'priority', 'u.pr')}, ${set(13, 'max_attempts', 'u.ma')}, ${set(14, 'timeout_ms', 'u.tm')},
       ${set(15, 'backoff', 'u.bo')}, ${set(16, 'concurrency_key', 'u.ck')},
       updated_at = ${ts('u.ua')}, last_event_ms = u.sm, last_event_seq = u.ss
     FROM unnest($1::uuid[], $2::int[], $3::bigint[], $4::bigint[], $5::float8[], $6::text[], $7::int[], $8::text[], $9::int[],
                 $10::float8[], $11::float8[], $12::float8[], $13::text[], $14::text[], $15::text[], $16::text[],
                 $17::text[], $18::int[], $19::int[], $20::int[], $21::text[], $22::text[])
       AS u(id, m, sm, ss, ua, s, a, w, x, sa, fa, ra, er, r, pg, p, ty, pr, ma, tm, bo, ck)
     WHERE j.id = u.id AND (j.last_event_ms, j.last_event_seq) < (u.sm, u.ss)`,
    params: [
      txt((p) => p.id), numArray(masks), num((p) => p.streamMs), num((p) => p.streamSeq), num((p) => p.updatedAt),
      txt((p) => p.status), num((p) => p.attempts), txt((p) => p.workerId), num((p) => p.executionSeq), num((p) => p.startedAt),
      num((p) => p.finishedAt), num((p) => p.runAt), txt((p) => p.lastError), txt((p) => p.result), txt((p) => p.progress), txt((p) => p.payload),
      txt((p) => p.type), num((p) => p.priority), num((p) => p.maxAttempts), num((p) => p.timeoutMs), txt((p) => p.backoff),
      txt((p) => p.concurrencyKey),
    ],
  };
}

/** The newest entry id (ms, seq as decimal strings) of each queue among a batch's events and logs, queues sorted (a fixed lock order). */
export function streamTops(b: MirrorBatch): { queue: string; ms: string; seq: string }[] {
  const top = new Map<string, { ms: string; seq: string }>();
  const newer = (a: { ms: string; seq: string }, ms: string, seq: string) =>
    ms.length !== a.ms.length ? ms.length > a.ms.length : ms !== a.ms ? ms > a.ms : seq.length !== a.seq.length ? seq.length > a.seq.length : seq > a.seq;
  for (const rows of [b.events, b.logs] as { queue: string; streamMs: string; streamSeq: string }[][]) {
    for (const r of rows) {
      const t = top.get(r.queue);
      if (!t || newer(t, r.streamMs, r.streamSeq)) top.set(r.queue, { ms: r.streamMs, seq: r.streamSeq });
    }
  }
  return [...top.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([queue, t]) => ({ queue, ...t }));
}
