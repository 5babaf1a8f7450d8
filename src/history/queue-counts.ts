import type { DataSource } from 'typeorm';
import type { QueueStore } from '../core/ports';

/**
 * Jobs per status in one queue (the `counts` object of GET /queues and
 * /dashboard/stats): the six statuses of API.md "Queues"; `blocked` (flow
 * jobs) is not counted here yet (src/http/openapi/schemas.ts COUNTED_STATUSES).
 */
export interface QueueCounts {
  waiting: number;
  delayed: number;
  active: number;
  completed: number;
  failed: number;
  cancelled: number;
}

/**
 * Completed and cancelled jobs per queue: primary-key reads of `job_counts`,
 * which triggers keep equal to `SELECT queue, status, count(*) FROM jobs`
 * (migration 1796000300000-HistoryQueries; counting the `jobs` rows
 * themselves scans nearly the whole table). $1 = queue names.
 */
export const TERMINAL_COUNTS_SQL = `SELECT queue, status, n::float8 AS n FROM job_counts
  WHERE queue = ANY($1::text[]) AND status = ANY('{completed,cancelled}'::text[])`;

/** Dead-letter queue size per queue, from `dead_letter_counts` (kept equal to the rows of `dead_letter_jobs`). $1 = queue names. */
export const DLQ_COUNTS_SQL = `SELECT queue, n::float8 AS n FROM dead_letter_counts WHERE queue = ANY($1::text[])`;

/**
 * Exact counts by status per queue, whatever Redis retention keeps:
 * - waiting / delayed / active: live, from Redis (`QueueStore.liveCounts`);
 * - completed / cancelled: rows of the Postgres projection (`jobs`) in that
 *   status, read from the trigger-kept `job_counts` (O(queues), not O(jobs));
 * - failed: jobs in the dead-letter queue (`dead_letter_jobs`, via
 *   `dead_letter_counts`), which is what status `failed` means in API.md and
 *   what GET /jobs/dlq/all lists.
 * The Postgres parts trail Redis by the audit lag (a job that just finished
 * is briefly in neither), and count the history kept by RETENTION_DAYS
 * pruning (pruneHistory deletes old completed/cancelled rows; DLQ rows stay).
 *
 * @param queues queue names; default every queue of `QueueStore.list()`.
 * @returns `{ [queue]: QueueCounts }` with every requested queue present (zeros if empty).
 * @throws when Redis or Postgres is unreachable.
 */
export async function queueCounts(db: DataSource, store: QueueStore, queues?: string[]): Promise<Record<string, QueueCounts>> {
  const names = queues ?? (await store.list());
  if (!names.length) return {};
  const [live, terminal, dlq] = await Promise.all([
    Promise.all(names.map((q) => store.liveCounts(q))),
    db.query(TERMINAL_COUNTS_SQL, [names]) as Promise<{ queue: string; status: string; n: number }[]>,
    db.query(DLQ_COUNTS_SQL, [names]) as Promise<{ queue: string; n: number }[]>,
  ]);
  const out: Record<string, QueueCounts> = {};
  names.forEach((q, i) => {
    const l = live[i];
    out[q] = { waiting: l.waiting, delayed: l.delayed, active: l.active, completed: 0, failed: 0, cancelled: 0 };
  });
  for (const r of terminal) if (out[r.queue]) out[r.queue][r.status as 'completed' | 'cancelled'] = r.n;
  for (const r of dlq) if (out[r.queue]) out[r.queue].failed = r.n;
  return out;
}

/** Sum of several queues' counts (the dashboard's `totals`). */
export function sumCounts(counts: Record<string, QueueCounts>): QueueCounts {
  const t: QueueCounts = { waiting: 0, delayed: 0, active: 0, completed: 0, failed: 0, cancelled: 0 };
  for (const c of Object.values(counts)) for (const k of Object.keys(t) as (keyof QueueCounts)[]) t[k] += c[k];
  return t;
}
