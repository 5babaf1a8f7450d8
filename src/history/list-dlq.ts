import type { DataSource } from 'typeorm';
import { DEFAULT_BACKOFF } from '../core/backoff';
import type { Job } from '../core/job';
import { badCursor, checkLimit, epochMs, HistoryJob, isUtcMicros, JOB_SELECT, JobRow, parsePayload, projectCondition, rowToJob, UUID_RE } from './common';
import type { Page } from './list-jobs';

export interface ListDlqFilter {
  /** Exact (qualified) queue name. */
  queue?: string;
  /** Only this project's queues (src/core/project-queue.ts); absent or null = every project. Not needed with `queue`. */
  project?: string | null;
  /** Exact job type. */
  type?: string;
  /** Dead-letter group (src/core/error-fingerprint.ts). */
  fingerprint?: string;
  /** `nextCursor` of the previous page; absent for the first page. */
  cursor?: string;
  /** Page size, integer 1..500, default 50. */
  limit?: number;
}

/** Decoded DLQ cursor: the (failed_at, job_id) of the last item, failed_at as exact µs text. */
interface DlqKey {
  failedAt: string;
  jobId: string;
}

/** (failed_at, job_id) → opaque base64url cursor. failed_at keeps its µs, so the bound is exact. */
export function encodeDlqCursor(k: DlqKey): string {
  return Buffer.from(`${k.failedAt}|${k.jobId}`, 'utf8').toString('base64url');
}

/**
 * Inverse of {@link encodeDlqCursor}: validated in full (a real time, a UUID),
 * so nothing a client makes up reaches PostgreSQL as a parameter it refuses.
 * @throws ValidationError when `cursor` is not one.
 */
export function decodeDlqCursor(cursor: string): DlqKey {
  if (!/^[A-Za-z0-9_-]{1,120}$/.test(cursor)) badCursor();
  const bytes = Buffer.from(cursor, 'base64url');
  if (bytes.toString('base64url') !== cursor) badCursor();
  const [failedAt, jobId, extra] = bytes.toString('utf8').split('|');
  if (extra !== undefined || !isUtcMicros(failedAt ?? '') || !UUID_RE.test(jobId ?? '')) badCursor();
  return { failedAt, jobId };
}

/**
 * Builds the SQL of one DLQ page: newest failures first, keyset on
 * (failed_at, job_id) with a row comparison that the
 * `dead_letter_jobs_*failed` indexes take as an index condition; the page's
 * rows are then joined to their `jobs` rows by primary key (LEFT: the DLQ
 * copy stands alone if the projection row is gone). Fetches `limit + 1` rows.
 * With a `project` and no queue: one LIMITed range of
 * `dead_letter_jobs_queue_failed` (or `_queue_type_failed` with a type) per
 * queue of the project that has (had) dead-letter jobs — the rows of
 * `dead_letter_counts` — then a top-N sort of at most queues × (limit + 1) rows;
 * with a `fingerprint` too, the group's rows (`dead_letter_jobs_fingerprint`)
 * with the project's condition as a filter.
 */
export function listDlqSql(
  f: { queue?: string; type?: string; fingerprint?: string; project?: string | null },
  after: DlqKey | null,
  limit: number,
): { sql: string; params: unknown[] } {
  const where: string[] = [];
  const params: unknown[] = [];
  const param = (v: unknown) => {
    params.push(v);
    return `$${params.length}`;
  };
  if (f.queue !== undefined) where.push(`d.queue = ${param(f.queue)}`);
  if (f.type !== undefined) where.push(`d.type = ${param(f.type)}`);
  if (f.fingerprint !== undefined) where.push(`d.fingerprint = ${param(f.fingerprint)}`);
  if (after) where.push(`(d.failed_at, d.job_id) < (${param(after.failedAt)}::timestamptz, ${param(after.jobId)}::uuid)`);
  let project = f.queue === undefined && f.project != null ? f.project : null;
  // A group is read from its fingerprint index (its INCLUDEd queue filtered by the project's condition), not per queue.
  if (project !== null && f.fingerprint !== undefined) {
    where.push(projectCondition('d.queue', project, param));
    project = null;
  }
  const n = param(limit + 1);
  // LIMIT inside, join outside: the page is cut from the index before any `jobs` row is read.
  const page =
    project === null
      ? `SELECT * FROM dead_letter_jobs d${where.length ? ` WHERE ${where.join(' AND ')}` : ''}
    ORDER BY d.failed_at DESC, d.job_id DESC LIMIT ${n}`
      : `SELECT d.* FROM dead_letter_counts c CROSS JOIN LATERAL (
      SELECT * FROM dead_letter_jobs d WHERE ${['d.queue = c.queue', ...where].join(' AND ')}
      ORDER BY d.failed_at DESC, d.job_id DESC LIMIT ${n}
    ) d WHERE ${projectCondition('c.queue', project, param)}
    ORDER BY d.failed_at DESC, d.job_id DESC LIMIT ${n}`;
  const sql = `SELECT ${JOB_SELECT},
    d.job_id AS d_id, d.queue AS d_queue, d.type AS d_type, d.payload AS d_payload, d.last_error AS d_last_error, d.attempts AS d_attempts, d.fingerprint AS d_fingerprint,
    ${epochMs('d.failed_at')} AS failed_ms, to_char(d.failed_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') AS failed_key
  FROM (
    ${page}
  ) d LEFT JOIN jobs j ON j.id = d.job_id
  ORDER BY d.failed_at DESC, d.job_id DESC`;
  return { sql, params };
}

type DlqRow = JobRow & {
  d_id: string;
  d_queue: string;
  d_type: string;
  d_payload: string;
  d_last_error: string | null;
  d_attempts: number;
  d_fingerprint: string | null;
  failed_ms: number;
  failed_key: string;
};

function dlqRowToJob(r: DlqRow): HistoryJob {
  const base: HistoryJob = r.id
    ? rowToJob(r)
    : {
        id: r.d_id, queue: r.d_queue, type: r.d_type, payload: {}, status: 'failed', priority: 0, attempts: r.d_attempts,
        maxAttempts: Math.max(1, r.d_attempts), backoff: { ...DEFAULT_BACKOFF }, timeoutMs: 600_000, idempotencyKey: null, concurrencyKey: null,
        flowId: null, flowRef: null, progress: null, result: null, lastError: null, workerId: null, createdAt: r.failed_ms, runAt: r.failed_ms,
        startedAt: null, finishedAt: r.failed_ms, updatedAt: r.failed_ms, executionSeq: r.d_attempts, cancelRequested: false,
      };
  return {
    ...base,
    id: r.d_id,
    queue: r.d_queue,
    type: r.d_type,
    payload: parsePayload(r.d_payload),
    status: 'failed',
    attempts: r.d_attempts,
    lastError: r.d_last_error,
    fingerprint: r.d_fingerprint,
    finishedAt: base.finishedAt ?? r.failed_ms,
  };
}

/**
 * `GET /jobs/dlq/all?queue=&type=&cursor=&limit=`: the dead-letter queue
 * from `dead_letter_jobs`, newest failure first, keyset pagination on
 * (failed_at, job_id) (no OFFSET; pages never overlap or skip).
 *
 * @returns `{ items: Job[], nextCursor }`: jobs in status `failed` with
 *   `lastError` and the payload of the DLQ copy (times epoch ms); the other
 *   fields come from the `jobs` row, or neutral defaults if it is gone.
 * @throws ValidationError on a bad limit or cursor (HTTP 400).
 */
export async function listDlq(db: DataSource, filter: ListDlqFilter = {}): Promise<Page<Job>> {
  const limit = checkLimit(filter.limit);
  const after = filter.cursor !== undefined && filter.cursor !== '' ? decodeDlqCursor(filter.cursor) : null;
  const { sql, params } = listDlqSql({ queue: filter.queue, type: filter.type, fingerprint: filter.fingerprint, project: filter.project }, after, limit);
  const rows: DlqRow[] = await db.query(sql, params);
  const more = rows.length > limit;
  const page = more ? rows.slice(0, limit) : rows;
  const last = page[page.length - 1];
  return { items: page.map(dlqRowToJob), nextCursor: more ? encodeDlqCursor({ failedAt: last.failed_key, jobId: last.d_id }) : null };
}
