import { BackoffSpec, DEFAULT_BACKOFF, decodeBackoff } from '../core/backoff';
import { ValidationError } from '../core/errors';
import type { Job, Json } from '../core/job';
import { JOB_STATUSES, JobStatus } from '../core/job-status';
import { DEFAULT_PROJECT } from '../core/project-queue';

/**
 * Helpers shared by the history queries: the SELECT list that reads a `jobs`
 * row as a {@link Job}, the row mapper, cursors and limit validation.
 * Framework-free; errors are the core's {@link ValidationError}
 * (HTTP 400 `validation_failed`).
 */

/** Canonical 8-4-4-4-12 hex UUID (any version); anything else cannot be a job id. */
export const UUID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

import { LIMIT_DEFAULT, LIMIT_MAX } from '../core/paging';

export { LIMIT_DEFAULT, LIMIT_MAX };

/** SQL for a timestamptz column as epoch ms (a JS number; exact, no Date parsing). */
export const epochMs = (col: string): string => `round(extract(epoch FROM ${col}) * 1000)::float8`;

/**
 * The columns of `jobs` (alias `j`) that {@link rowToJob} reads. Times come
 * back as epoch ms. `cancel_requested` is derived: an active job whose
 * current execution (started at `started_at`) got a `cancel_requested` event
 * (the projection has no column for it); it costs one probe of the
 * `job_events_job` index, and only for active rows.
 */
export const JOB_SELECT = `j.id, j.queue, j.type, j.status, j.priority, j.attempts, j.max_attempts, j.backoff, j.timeout_ms,
  j.idempotency_key, j.concurrency_key, j.flow_id, j.flow_ref, j.payload, j.progress, j.result, j.last_error, j.worker_id, j.execution_seq,
  ${epochMs('j.created_at')} AS created_ms, ${epochMs('j.run_at')} AS run_ms, ${epochMs('j.started_at')} AS started_ms,
  ${epochMs('j.finished_at')} AS finished_ms, ${epochMs('j.updated_at')} AS updated_ms,
  CASE WHEN j.status = 'active' THEN EXISTS (
    SELECT 1 FROM job_events e WHERE e.job_id = j.id AND e.event = 'cancel_requested' AND e.at >= j.started_at
  ) ELSE false END AS cancel_requested`;

/** A row selected with {@link JOB_SELECT}. */
export interface JobRow {
  id: string;
  queue: string;
  type: string;
  status: string;
  priority: number;
  attempts: number;
  max_attempts: number;
  backoff: string;
  timeout_ms: number;
  idempotency_key: string | null;
  concurrency_key: string | null;
  flow_id: string | null;
  flow_ref: string | null;
  payload: string;
  progress: string | null;
  result: string | null;
  last_error: string | null;
  worker_id: string | null;
  execution_seq: number;
  created_ms: number;
  run_ms: number;
  started_ms: number | null;
  finished_ms: number | null;
  updated_ms: number;
  cancel_requested: boolean;
}

/** JSON text → value; null for null/empty text or text that is not JSON (never throws). */
export function parseJsonOrNull(text: string | null | undefined): Json | null {
  if (text === null || text === undefined || text === '') return null;
  try {
    return JSON.parse(text) as Json;
  } catch {
    return null;
  }
}

/** A stored payload → object; `{}` when it is not a JSON object (a corrupted job stays readable). */
export function parsePayload(text: string | null | undefined): Record<string, Json> {
  const v = parseJsonOrNull(text);
  return v !== null && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, Json>) : {};
}

function parseBackoff(s: string): BackoffSpec {
  try {
    return decodeBackoff(s);
  } catch {
    return { ...DEFAULT_BACKOFF };
  }
}

/**
 * A job as the history reads it: the Job of src/core/job.ts and, for a job
 * of a flow (API.md v1.2 "Workflows"), its flow and its ref in it — both
 * null outside flows and for rows mirrored before migration 1796001700000-Workflows.
 */
export type HistoryJob = Job & { flowId: string | null; flowRef: string | null };

/** Maps a `jobs` row (selected with {@link JOB_SELECT}) to the Job shape of src/core/job.ts, plus the flow columns ({@link HistoryJob}). */
export function rowToJob(r: JobRow): HistoryJob {
  return {
    id: r.id,
    queue: r.queue,
    type: r.type,
    payload: parsePayload(r.payload),
    status: (JOB_STATUSES as readonly string[]).includes(r.status) ? (r.status as JobStatus) : 'failed',
    priority: r.priority,
    attempts: r.attempts,
    maxAttempts: r.max_attempts,
    backoff: parseBackoff(r.backoff),
    timeoutMs: r.timeout_ms,
    idempotencyKey: r.idempotency_key,
    // Rows mirrored before the column existed read null (migration 1796001600000-ConcurrencyKeys).
    concurrencyKey: r.concurrency_key ?? null,
    flowId: r.flow_id ?? null,
    flowRef: r.flow_ref ?? null,
    progress: parseJsonOrNull(r.progress),
    result: parseJsonOrNull(r.result),
    lastError: r.last_error,
    workerId: r.worker_id,
    createdAt: r.created_ms,
    runAt: r.run_ms,
    startedAt: r.started_ms,
    finishedAt: r.finished_ms,
    updatedAt: r.updated_ms,
    executionSeq: r.execution_seq,
    cancelRequested: r.cancel_requested,
  };
}

/**
 * Validates a page size.
 * @returns `limit`, or {@link LIMIT_DEFAULT} when undefined.
 * @throws ValidationError unless an integer in 1..{@link LIMIT_MAX}.
 */
export function checkLimit(limit: number | undefined): number {
  if (limit === undefined) return LIMIT_DEFAULT;
  if (!Number.isInteger(limit) || limit < 1 || limit > LIMIT_MAX) {
    throw new ValidationError('invalid limit', [{ path: 'limit', message: `must be an integer 1..${LIMIT_MAX}` }]);
  }
  return limit;
}

/**
 * Validates an optional status filter.
 * @throws ValidationError when not one of the job statuses.
 */
export function checkStatus(status: string | undefined): JobStatus | undefined {
  if (status === undefined) return undefined;
  if (!(JOB_STATUSES as readonly string[]).includes(status)) {
    throw new ValidationError('invalid status', [{ path: 'status', message: `must be one of ${JOB_STATUSES.join(', ')}` }]);
  }
  return status as JobStatus;
}

/** Throws the cursor validation error (HTTP 400). */
export function badCursor(): never {
  throw new ValidationError('invalid cursor', [{ path: 'cursor', message: 'not a cursor returned by this endpoint' }]);
}

/**
 * True when `ts` is a real UTC time `YYYY-MM-DDTHH:MM:SS.ffffffZ` (years
 * 0001..9999, a day that exists in that month, no leap second): the form of
 * the DLQ cursor's key. A look-alike (`2026-13-45T99:...`) would reach
 * PostgreSQL as a timestamptz parameter and fail there.
 */
export function isUtcMicros(ts: string): boolean {
  const m = /^(\d{4})-(\d\d)-(\d\d)T(\d\d):(\d\d):(\d\d)\.\d{6}Z$/.exec(ts);
  if (!m) return false;
  const [y, mo, d, h, mi, s] = m.slice(1).map(Number);
  if (y < 1 || mo < 1 || mo > 12 || d < 1 || h > 23 || mi > 59 || s > 59) return false;
  // Day 0 of the next month is the last day of this one (UTC, any year ≥ 1).
  const date = new Date(0);
  date.setUTCFullYear(y, mo, 0);
  return d <= date.getUTCDate();
}

/** A job id → opaque cursor: base64url of its 16 bytes (22 characters). */
export function encodeIdCursor(id: string): string {
  return Buffer.from(id.replace(/-/g, ''), 'hex').toString('base64url');
}

/**
 * Inverse of {@link encodeIdCursor}.
 * @throws ValidationError when `cursor` is not one (exactly as encoded).
 */
export function decodeIdCursor(cursor: string): string {
  if (!/^[A-Za-z0-9_-]{22}$/.test(cursor)) badCursor();
  const bytes = Buffer.from(cursor, 'base64url');
  // Canonical only: the two spare bits of the last character must be zero.
  if (bytes.length !== 16 || bytes.toString('base64url') !== cursor) badCursor();
  const hex = bytes.toString('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

/**
 * SQL condition: the qualified queue name in column `col` belongs to
 * `project` (src/core/project-queue.ts): for `default` a name without `/`,
 * for any other one that starts with `<project>/`. Used as a filter on the
 * small per-queue tables (`job_counts`, `dead_letter_counts`, `job_finishes`)
 * that the history queries start from, or on the rows of a bounded scan.
 * @param param adds a query parameter and returns its placeholder.
 */
export function projectCondition(col: string, project: string, param: (v: unknown) => string): string {
  return project === DEFAULT_PROJECT ? `strpos(${col}, '/') = 0` : `starts_with(${col}, ${param(project + '/')})`;
}
