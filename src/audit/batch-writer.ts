import type { EntityManager } from 'typeorm';
import type { AuditBatch, JobPatch } from './projection';

/** Bits of JobPatch.mask: which columns a patch sets (others stay as they are). */
const PATCH_COLUMNS = ['status', 'attempts', 'workerId', 'executionSeq', 'startedAt', 'finishedAt', 'runAt', 'lastError', 'result', 'progress', 'payload'] as const;

const ts = (col: string) => `to_timestamp(${col} / 1000.0)`;

function dedupe<T>(rows: T[], key: (r: T) => string): T[] {
  const m = new Map<string, T>();
  for (const r of rows) m.set(key(r), r);
  return [...m.values()];
}

/**
 * Writes one projected batch inside the caller's transaction, with one
 * multi-row statement per table (unnest of parallel arrays).
 * Idempotent: events and logs are keyed by their stream entry id; job rows
 * change only for events newer than the newest one they hold.
 */
export async function writeBatch(m: EntityManager, b: AuditBatch): Promise<void> {
  if (b.events.length) {
    const e = b.events;
    await m.query(
      `INSERT INTO job_events (queue, stream_ms, stream_seq, job_id, at, event, from_status, to_status, attempt, execution_seq, worker_id, reason, error, data)
       SELECT q, sm, ss, j, ${ts('at')}, e, f, t, a, x, w, r, er, d
       FROM unnest($1::text[], $2::bigint[], $3::bigint[], $4::uuid[], $5::float8[], $6::text[], $7::text[], $8::text[], $9::int[], $10::int[], $11::text[], $12::text[], $13::text[], $14::text[])
         AS u(q, sm, ss, j, at, e, f, t, a, x, w, r, er, d)
       ORDER BY sm, ss
       ON CONFLICT (queue, stream_ms, stream_seq) DO NOTHING`,
      [
        e.map((r) => r.queue), e.map((r) => r.streamMs), e.map((r) => r.streamSeq), e.map((r) => r.jobId), e.map((r) => r.at),
        e.map((r) => r.event), e.map((r) => r.from), e.map((r) => r.to), e.map((r) => r.attempt), e.map((r) => r.executionSeq),
        e.map((r) => r.workerId), e.map((r) => r.reason), e.map((r) => r.error), e.map((r) => r.data),
      ],
    );
  }
  if (b.logs.length) {
    const l = b.logs;
    await m.query(
      `INSERT INTO job_logs (queue, stream_ms, stream_seq, job_id, at, attempt, level, message)
       SELECT q, sm, ss, j, ${ts('at')}, a, lv, msg
       FROM unnest($1::text[], $2::bigint[], $3::bigint[], $4::uuid[], $5::float8[], $6::int[], $7::text[], $8::text[]) AS u(q, sm, ss, j, at, a, lv, msg)
       ORDER BY sm, ss
       ON CONFLICT (queue, stream_ms, stream_seq) DO NOTHING`,
      [l.map((r) => r.queue), l.map((r) => r.streamMs), l.map((r) => r.streamSeq), l.map((r) => r.jobId), l.map((r) => r.at), l.map((r) => r.attempt), l.map((r) => r.level), l.map((r) => r.message)],
    );
  }
  if (b.inserts.length) {
    const i = dedupe(b.inserts, (r) => r.id);
    // A row that already exists is brought forward like a patch would be (the
    // insert may carry later events of the batch, folded in by the projection).
    await m.query(
      `INSERT INTO jobs AS j (id, queue, type, status, priority, attempts, max_attempts, backoff, timeout_ms, idempotency_key, payload,
                         execution_seq, created_at, run_at, updated_at, last_event_ms, last_event_seq,
                         worker_id, started_at, finished_at, last_error, result, progress)
       SELECT id, q, ty, s, pr, a, ma, bo, tm, ik, p, x, ${ts('ca')}, ${ts('ra')}, ${ts('ua')}, sm, ss,
              w, ${ts('sa')}, ${ts('fa')}, er, r, pg
       FROM unnest($1::uuid[], $2::text[], $3::text[], $4::text[], $5::int[], $6::int[], $7::text[], $8::int[], $9::text[], $10::text[],
                   $11::float8[], $12::float8[], $13::bigint[], $14::bigint[], $15::int[], $16::int[], $17::float8[], $18::text[],
                   $19::float8[], $20::float8[], $21::text[], $22::text[], $23::text[])
         AS u(id, q, ty, s, pr, ma, bo, tm, ik, p, ca, ra, sm, ss, a, x, ua, w, sa, fa, er, r, pg)
       ON CONFLICT (id) DO UPDATE SET
         status = EXCLUDED.status, attempts = EXCLUDED.attempts, execution_seq = EXCLUDED.execution_seq, run_at = EXCLUDED.run_at,
         updated_at = EXCLUDED.updated_at, worker_id = EXCLUDED.worker_id, started_at = EXCLUDED.started_at,
         finished_at = EXCLUDED.finished_at, last_error = EXCLUDED.last_error, result = EXCLUDED.result,
         progress = EXCLUDED.progress, payload = EXCLUDED.payload,
         last_event_ms = EXCLUDED.last_event_ms, last_event_seq = EXCLUDED.last_event_seq
       WHERE (j.last_event_ms, j.last_event_seq) < (EXCLUDED.last_event_ms, EXCLUDED.last_event_seq)`,
      [
        i.map((r) => r.id), i.map((r) => r.queue), i.map((r) => r.type), i.map((r) => r.status), i.map((r) => r.priority), i.map((r) => r.maxAttempts),
        i.map((r) => r.backoff), i.map((r) => r.timeoutMs), i.map((r) => r.idempotencyKey), i.map((r) => r.payload), i.map((r) => r.createdAt),
        i.map((r) => r.runAt), i.map((r) => r.streamMs), i.map((r) => r.streamSeq), i.map((r) => r.attempts), i.map((r) => r.executionSeq),
        i.map((r) => r.updatedAt), i.map((r) => r.workerId), i.map((r) => r.startedAt), i.map((r) => r.finishedAt), i.map((r) => r.lastError),
        i.map((r) => r.result), i.map((r) => r.progress),
      ],
    );
  }
  if (b.patches.length) await applyPatches(m, b.patches);
  if (b.starts.length) {
    const s = dedupe(b.starts, (r) => `${r.jobId}/${r.executionSeq}`);
    await m.query(
      `INSERT INTO job_executions (job_id, execution_seq, queue, attempt, worker_id, started_at, outcome)
       SELECT j, x, q, a, w, ${ts('sa')}, 'running'
       FROM unnest($1::uuid[], $2::int[], $3::text[], $4::int[], $5::text[], $6::float8[]) AS u(j, x, q, a, w, sa)
       ON CONFLICT (job_id, execution_seq) DO NOTHING`,
      [s.map((r) => r.jobId), s.map((r) => r.executionSeq), s.map((r) => r.queue), s.map((r) => r.attempt), s.map((r) => r.workerId), s.map((r) => r.startedAt)],
    );
  }
  if (b.ends.length) {
    const e = dedupe(b.ends, (r) => `${r.jobId}/${r.executionSeq}`);
    await m.query(
      `INSERT INTO job_executions AS je (job_id, execution_seq, queue, attempt, worker_id, started_at, finished_at, outcome, error, duration_ms)
       SELECT j, x, q, a, w, ${ts('sa')}, ${ts('fa')}, o, er, d
       FROM unnest($1::uuid[], $2::int[], $3::text[], $4::int[], $5::text[], $6::float8[], $7::float8[], $8::text[], $9::text[], $10::int[])
         AS u(j, x, q, a, w, sa, fa, o, er, d)
       ON CONFLICT (job_id, execution_seq) DO UPDATE SET
         finished_at = EXCLUDED.finished_at, outcome = EXCLUDED.outcome, error = EXCLUDED.error,
         duration_ms = COALESCE(EXCLUDED.duration_ms, round(extract(epoch FROM EXCLUDED.finished_at - je.started_at) * 1000)::int)`,
      [
        e.map((r) => r.jobId), e.map((r) => r.executionSeq), e.map((r) => r.queue), e.map((r) => r.attempt), e.map((r) => r.workerId),
        e.map((r) => r.startedAt), e.map((r) => r.finishedAt), e.map((r) => r.outcome), e.map((r) => r.error), e.map((r) => r.durationMs),
      ],
    );
  }
  if (b.dlq.length) {
    // The DLQ follows the projection (already patched above, and only ever
    // moved forward by newer events): a job is in it exactly while its newest
    // known state is 'failed', with that failure's error. Taking the row from
    // the batch's own events instead would let a replayed older batch re-add
    // a job that was retried since, delete the row of a newer failure, or
    // overwrite it with an older error.
    // The payload and type come from the projection, so the copy survives pruning of the job.
    // A purged job stays 'failed' in `jobs` but leaves the DLQ for good (its
    // Redis hash is gone, so it can never be retried): a `purged` event in
    // the audit table keeps a replayed older failure from re-adding it.
    const ids = b.dlq.map((d) => d.jobId);
    const purged = b.dlq.filter((d) => d.purged).map((d) => d.jobId);
    await m.query(
      `DELETE FROM dead_letter_jobs d WHERE d.job_id = ANY($1::uuid[])
         AND (d.job_id = ANY($2::uuid[]) OR NOT EXISTS (SELECT 1 FROM jobs j WHERE j.id = d.job_id AND j.status = 'failed'))`,
      [ids, purged],
    );
    await m.query(
      `INSERT INTO dead_letter_jobs (job_id, queue, type, payload, last_error, attempts, failed_at)
       SELECT j.id, j.queue, j.type, j.payload, j.last_error, j.attempts, COALESCE(j.finished_at, j.updated_at)
       FROM jobs j WHERE j.id = ANY($1::uuid[]) AND j.status = 'failed'
         AND NOT EXISTS (SELECT 1 FROM job_events e WHERE e.job_id = j.id AND e.event = 'purged')
       ON CONFLICT (job_id) DO UPDATE SET payload = EXCLUDED.payload, last_error = EXCLUDED.last_error,
         attempts = EXCLUDED.attempts, failed_at = EXCLUDED.failed_at`,
      [ids],
    );
  }
}

/** One UPDATE for all patches; a bit mask per row says which columns it sets. */
async function applyPatches(m: EntityManager, patches: JobPatch[]): Promise<void> {
  const masks = patches.map((p) => PATCH_COLUMNS.reduce((acc, c, i) => (p[c] !== undefined ? acc | (1 << i) : acc), 0));
  const set = (i: number, col: string, val: string) => `${col} = CASE WHEN u.m & ${1 << i} <> 0 THEN ${val} ELSE j.${col} END`;
  await m.query(
    `UPDATE jobs j SET
       ${set(0, 'status', 'u.s')}, ${set(1, 'attempts', 'u.a')}, ${set(2, 'worker_id', 'u.w')}, ${set(3, 'execution_seq', 'u.x')},
       ${set(4, 'started_at', ts('u.sa'))}, ${set(5, 'finished_at', ts('u.fa'))}, ${set(6, 'run_at', ts('u.ra'))},
       ${set(7, 'last_error', 'u.er')}, ${set(8, 'result', 'u.r')}, ${set(9, 'progress', 'u.pg')}, ${set(10, 'payload', 'u.p')},
       updated_at = ${ts('u.ua')}, last_event_ms = u.sm, last_event_seq = u.ss
     FROM unnest($1::uuid[], $2::int[], $3::bigint[], $4::bigint[], $5::float8[], $6::text[], $7::int[], $8::text[], $9::int[],
                 $10::float8[], $11::float8[], $12::float8[], $13::text[], $14::text[], $15::text[], $16::text[])
       AS u(id, m, sm, ss, ua, s, a, w, x, sa, fa, ra, er, r, pg, p)
     WHERE j.id = u.id AND (j.last_event_ms, j.last_event_seq) < (u.sm, u.ss)`,
    [
      patches.map((p) => p.id), masks, patches.map((p) => p.streamMs), patches.map((p) => p.streamSeq), patches.map((p) => p.updatedAt),
      patches.map((p) => p.status ?? null), patches.map((p) => p.attempts ?? null), patches.map((p) => p.workerId ?? null),
      patches.map((p) => p.executionSeq ?? null), patches.map((p) => p.startedAt ?? null), patches.map((p) => p.finishedAt ?? null),
      patches.map((p) => p.runAt ?? null), patches.map((p) => p.lastError ?? null), patches.map((p) => p.result ?? null),
      patches.map((p) => p.progress ?? null), patches.map((p) => p.payload ?? null),
    ],
  );
}
