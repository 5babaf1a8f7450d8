/*
 * The soak's verdict, read from the history in PostgreSQL (the run's private
 * database): for every accepted job, its `jobs` row, its `job_events` in
 * stream order and its `job_executions` rows. Pure functions over the rows
 * (judgeJob) plus the queries that fetch them (loadHistory).
 *
 * What a job must show:
 * - lost: none. Its row exists and is terminal: `completed`, or `failed` in
 *   the dead-letter queue for the jobs meant to fail (kind `doomed`).
 * - one completion: exactly one `completed` event for a completed job.
 *   A second one is a duplicate; it is told apart by whether a `stalled`
 *   event lies between the two (the first completion was lost from Redis and
 *   the lease expired: at-least-once, but a completion the worker saw
 *   acknowledged ran again) or not (nothing explains it).
 * - every re-run explained: each `claimed` after the first is preceded, since
 *   the previous claim, by `stalled` (lease expired), `retry_scheduled` (the
 *   handler failed) or `released` (graceful shutdown). One with none of them
 *   is a second execution the history cannot explain.
 * - a whole history: exactly one `enqueued` event; the last event is the
 *   terminal one (`completed`, or `failed` for a dead-lettered job); one
 *   `job_executions` row per claim, execution_seq 1..n, none still
 *   `running`, exactly one `completed` row for a completed job.
 */

const CHUNK = 5000;
const RETURNS = new Set(['stalled', 'retry_scheduled', 'released']);

/**
 * Reads the history of `ids` from PostgreSQL.
 * @returns {Promise<{rows: Map<string, object>, events: Map<string, object[]>, executions: Map<string, object[]>, quarantined: number}>}
 */
async function loadHistory(pg, ids) {
  const rows = new Map();
  const events = new Map();
  const executions = new Map();
  for (let i = 0; i < ids.length; i += CHUNK) {
    const chunk = ids.slice(i, i + CHUNK);
    const r1 = await pg.query(
      `SELECT j.id::text AS id, j.queue, j.status, j.attempts, j.execution_seq,
              (extract(epoch FROM j.created_at) * 1000)::float8 AS created_ms,
              (extract(epoch FROM j.run_at) * 1000)::float8 AS run_ms,
              (extract(epoch FROM j.finished_at) * 1000)::float8 AS finished_ms,
              (d.job_id IS NOT NULL) AS dlq
         FROM jobs j LEFT JOIN dead_letter_jobs d ON d.job_id = j.id
        WHERE j.id = ANY($1::uuid[])`,
      [chunk],
    );
    for (const r of r1.rows) rows.set(r.id, r);
    const r2 = await pg.query(
      `SELECT job_id::text AS id, event, stream_ms::text AS ms, stream_seq::text AS seq,
              execution_seq AS x, attempt, reason, worker_id AS worker,
              (extract(epoch FROM at) * 1000)::float8 AS at_ms
         FROM job_timeline
        WHERE job_id = ANY($1::uuid[]) AND event <> 'progress'
        ORDER BY job_id, stream_ms, stream_seq`,
      [chunk],
    );
    for (const e of r2.rows) {
      let l = events.get(e.id);
      if (!l) events.set(e.id, (l = []));
      l.push(e);
    }
    const r3 = await pg.query(
      `SELECT job_id::text AS id, execution_seq AS x, outcome, worker_id AS worker
         FROM job_executions WHERE job_id = ANY($1::uuid[]) ORDER BY job_id, execution_seq`,
      [chunk],
    );
    for (const x of r3.rows) {
      let l = executions.get(x.id);
      if (!l) executions.set(x.id, (l = []));
      l.push(x);
    }
  }
  const q = await pg.query('SELECT count(*)::int AS n FROM audit_quarantine');
  return { rows, events, executions, quarantined: q.rows[0].n };
}

/**
 * Judges one job.
 * @param {{kind: string}} meta what the soak sent (kind `doomed` = meant to end in the DLQ)
 * @param {object|undefined} row its `jobs` row (loadHistory)
 * @param {object[]} events its events in stream order (no `progress`)
 * @param {object[]} executions its `job_executions` rows by execution_seq
 * @returns {{status: string, lost: string|null, unexpected: string|null, completions: number,
 *   claims: number, stalled: number, duplicate: null|'after_stall'|'without_stall',
 *   unexplainedRerun: boolean, history: string[]}}
 */
function judgeJob(meta, row, events = [], executions = []) {
  const out = { status: row ? (row.dlq ? 'failed' : row.status) : 'missing', lost: null, unexpected: null, completions: 0, claims: 0, stalled: 0, duplicate: null, unexplainedRerun: false, history: [] };
  const expected = meta.kind === 'doomed' ? 'failed' : 'completed';
  if (!row) out.lost = 'no row in jobs';
  else if (!['completed', 'failed', 'cancelled'].includes(row.status)) out.lost = `still ${row.status}`;
  else if (row.status === 'failed' && !row.dlq) out.lost = 'failed but not in dead_letter_jobs';
  else if (out.status !== expected) out.unexpected = `${out.status}, expected ${expected}`;

  let returned = false;
  let stalledSinceCompletion = false;
  const claimSeqs = [];
  for (const e of events) {
    if (e.event === 'claimed') {
      out.claims++;
      claimSeqs.push(e.x);
      if (out.claims > 1 && !returned) out.unexplainedRerun = true;
      returned = false;
    } else if (RETURNS.has(e.event)) {
      returned = true;
      if (e.event === 'stalled') {
        out.stalled++;
        stalledSinceCompletion = true;
      }
    } else if (e.event === 'completed') {
      out.completions++;
      if (out.completions > 1 && out.duplicate !== 'without_stall') out.duplicate = stalledSinceCompletion ? 'after_stall' : 'without_stall';
      stalledSinceCompletion = false;
    }
  }

  const h = out.history;
  const n = (name) => events.filter((e) => e.event === name).length;
  if (row) {
    if (n('enqueued') !== 1) h.push(`${n('enqueued')} enqueued events`);
    const last = events.length ? events[events.length - 1].event : null;
    const terminal = row.status === 'completed' ? 'completed' : row.status === 'failed' ? 'failed' : row.status;
    if (last !== terminal) h.push(`last event ${last}, status ${row.status}`);
    if (row.status === 'completed' && out.completions === 0) h.push('completed without a completed event');
    const xs = executions.map((x) => x.x);
    const distinctClaims = [...new Set(claimSeqs)];
    if (xs.join(',') !== distinctClaims.map((_, i) => i + 1).join(',')) h.push(`executions [${xs}] vs claims [${claimSeqs}]`);
    if (executions.some((x) => x.outcome === 'running')) h.push('an execution still running');
    const doneRows = executions.filter((x) => x.outcome === 'completed').length;
    if (row.status === 'completed' && doneRows !== 1) h.push(`${doneRows} completed executions`);
  }
  return out;
}

/** The p-th percentile (0..100) of a sorted array of numbers, or null. */
function percentile(sorted, p) {
  if (!sorted.length) return null;
  const i = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[i];
}

/** A compact one-line trail: `enqueued claimed(1,w-abc) stalled claimed(2) completed`, with times relative to t0 (ms). */
function trail(events, t0) {
  return events
    .map((e) => {
      const t = t0 != null && e.at_ms != null ? `@${((e.at_ms - t0) / 1000).toFixed(2)}s` : '';
      const x = e.x != null && (e.event === 'claimed' || e.event === 'completed' || e.event === 'stalled') ? `#${e.x}` : '';
      return `${e.event}${x}${t}`;
    })
    .join(' ');
}

module.exports = { loadHistory, judgeJob, percentile, trail };
