import type { DataSource } from 'typeorm';
import type { Job } from '../../core/job';
import { checkLimit, checkStatus, decodeIdCursor, encodeIdCursor, JOB_SELECT, JobRow, rowToJob } from './common';

export interface ListJobsFilter {
  /** Exact queue name. */
  queue?: string;
  /** One of the job statuses (waiting, delayed, active, completed, failed, cancelled). */
  status?: string;
  /** Exact job type. */
  type?: string;
  /** `nextCursor` of the previous page; absent for the first page. */
  cursor?: string;
  /** Page size, integer 1..500, default 50. */
  limit?: number;
}

export interface Page<T> {
  items: T[];
  /** Opaque cursor of the next page; null on the last page. */
  nextCursor: string | null;
}

/**
 * Builds the SQL of one page. Each filter is an equality on an index prefix
 * and the cursor a `j.id < $n` bound on the index's last column, so every
 * filter combination is one ordered index range scan stopped by LIMIT:
 * no OFFSET, no sort (see docs/query-plans.md). Fetches `limit + 1` rows to
 * know whether a next page exists.
 * @param afterId the decoded cursor (the last id of the previous page).
 */
export function listJobsSql(f: { queue?: string; status?: string; type?: string }, afterId: string | null, limit: number): { sql: string; params: unknown[] } {
  const where: string[] = [];
  const params: unknown[] = [];
  const add = (cond: (p: string) => string, v: unknown) => {
    params.push(v);
    where.push(cond(`$${params.length}`));
  };
  if (f.queue !== undefined) add((p) => `j.queue = ${p}`, f.queue);
  if (f.status !== undefined) add((p) => `j.status = ${p}`, f.status);
  if (f.type !== undefined) add((p) => `j.type = ${p}`, f.type);
  if (afterId !== null) add((p) => `j.id < ${p}::uuid`, afterId);
  params.push(limit + 1);
  const sql = `SELECT ${JOB_SELECT} FROM jobs j${where.length ? ` WHERE ${where.join(' AND ')}` : ''} ORDER BY j.id DESC LIMIT $${params.length}`;
  return { sql, params };
}

/**
 * `GET /jobs?queue=&status=&type=&cursor=&limit=`: jobs from the Postgres
 * projection, newest first (UUIDv7 ids sort by creation time), keyset
 * pagination on `id`.
 *
 * Pages never overlap or skip: a page holds the `limit` largest ids below
 * the cursor that match the filter, so every job that existed (and matched)
 * when the first page was read appears exactly once while inserts go on;
 * jobs created later sort before the cursor and do not show up. (A job whose
 * status changes between two pages can leave or enter a status filter.)
 *
 * @returns `{ items: Job[] (≤ limit, times epoch ms), nextCursor }`;
 *   nextCursor is the base64url of the last item's id, null when no more.
 * @throws ValidationError on a bad status, limit or cursor (HTTP 400).
 */
export async function listJobs(db: DataSource, filter: ListJobsFilter = {}): Promise<Page<Job>> {
  const limit = checkLimit(filter.limit);
  const status = checkStatus(filter.status);
  const afterId = filter.cursor !== undefined && filter.cursor !== '' ? decodeIdCursor(filter.cursor) : null;
  const { sql, params } = listJobsSql({ queue: filter.queue, status, type: filter.type }, afterId, limit);
  const rows: JobRow[] = await db.query(sql, params);
  const more = rows.length > limit;
  const items = (more ? rows.slice(0, limit) : rows).map(rowToJob);
  return { items, nextCursor: more ? encodeIdCursor(items[items.length - 1].id) : null };
}
