import type { DataSource } from 'typeorm';
import type { Json } from '../core/job';
import { epochMs, UUID_RE } from './common';

/** One audit event, the API.md event shape (times epoch ms; the API renders ISO). */
export interface JobEvent {
  /** Position in the job's timeline: 1 for its first event (`enqueued`), then 2, 3… in stream order. */
  seq: number;
  /** When the transition happened, epoch ms (Redis clock). */
  at: number;
  /** enqueued, promoted, claimed, heartbeat_lost, progress, completed, retry_scheduled, failed, stalled, released, cancelled, cancel_requested, retried_from_dlq, purged, debounced, unblocked, blocked. */
  event: string;
  /** Status before (null for `enqueued`). */
  from: string | null;
  /** Status after. */
  to: string | null;
  attempt: number | null;
  workerId: string | null;
  /** e.g. `lease_expired`, `timeout`, `client`, `shutdown`. */
  reason: string | null;
  error: string | null;
  /** Event data parsed from JSON: the payload on `enqueued` and `debounced`, the result on `completed`, the progress on `progress`; the raw text if it is not JSON. */
  data: Json | null;
}

/**
 * One job's timeline in stream order, from the view `job_timeline` (the
 * job's `job_events` rows and the claimed / completed events its execution
 * rows hold: migration 1796001900000-FoldedExecutionEvents): a primary-key
 * range scan of the job's partition of each table, then a sort of the
 * job's few events; `seq` numbers the rows. $1 = job id.
 */
export const JOB_EVENTS_SQL = `SELECT row_number() OVER (ORDER BY stream_ms, stream_seq)::float8 AS seq, ${epochMs('at')} AS at_ms, event, from_status, to_status, attempt, worker_id, reason, error, data
  FROM job_timeline WHERE job_id = $1 ORDER BY stream_ms, stream_seq`;

function parseData(text: string | null): Json | null {
  if (text === null || text === '') return null;
  try {
    return JSON.parse(text) as Json;
  } catch {
    return text;
  }
}

/**
 * `GET /jobs/:id/events`: the audit trail of a job, oldest first.
 * Events not mirrored yet (audit lag) are not included.
 * @returns `{ items }`, empty for an unknown id (the caller answers 404 after
 *   checking existence with getJob, since a brand-new job may have no rows yet).
 * @throws only when Postgres is unreachable.
 */
export async function jobEvents(db: DataSource, id: string): Promise<{ items: JobEvent[] }> {
  if (!UUID_RE.test(id)) return { items: [] };
  const rows: any[] = await db.query(JOB_EVENTS_SQL, [id.toLowerCase()]);
  return {
    items: rows.map((r) => ({
      seq: r.seq,
      at: r.at_ms,
      event: r.event,
      from: r.from_status,
      to: r.to_status,
      attempt: r.attempt,
      workerId: r.worker_id,
      reason: r.reason,
      error: r.error,
      data: parseData(r.data),
    })),
  };
}
