import type { DataSource } from 'typeorm';
import { JOB_STATUSES } from '../core/job-status';
import { ValidationError } from '../core/errors';
import { checkLimit, checkStatus, decodeIdCursor, encodeIdCursor, HistoryJob, JOB_SELECT, JobRow, projectCondition, rowToJob, UUID_RE } from './common';

/** PostgreSQL's SQLSTATE for a statement cancelled by statement_timeout (manual, appendix A). */
const QUERY_CANCELED = '57014';

/**
 * Runs a search under {@link PAYLOAD_SEARCH_TIMEOUT_MS} (SET LOCAL in its own transaction).
 * @throws ValidationError (400, on `from`) when it runs out of time: the client can narrow the range.
 */
async function boundedQuery(db: DataSource, sql: string, params: unknown[]): Promise<JobRow[]> {
  try {
    return await db.transaction(async (m) => {
      await m.query(`SET LOCAL statement_timeout = ${PAYLOAD_SEARCH_TIMEOUT_MS}`);
      return (await m.query(sql, params)) as JobRow[];
    });
  } catch (e) {
    const code = (e as { driverError?: { code?: string }; code?: string }).driverError?.code ?? (e as { code?: string }).code;
    if (code !== QUERY_CANCELED) throw e;
    throw new ValidationError('payload search took too long', [
      { path: 'from', message: `the search ran over ${PAYLOAD_SEARCH_TIMEOUT_MS} ms: narrow from..to, add queue/type/status, or enable payloadSearch on the queue` },
    ]);
  }
}

export interface ListJobsFilter {
  /** Exact (qualified) queue name. */
  queue?: string;
  /**
   * Only this project's queues (src/core/project-queue.ts); absent or null =
   * every project. Not needed with `queue` (a qualified name names its project).
   */
  project?: string | null;
  /** One of the job statuses (waiting, delayed, active, completed, failed, cancelled, blocked). */
  status?: string;
  /** Exact job type. */
  type?: string;
  /** Only the jobs of this flow (API.md v1.2 "Workflows"): a UUID, else ValidationError on `flowId`. */
  flowId?: string;
  /** `nextCursor` of the previous page; absent for the first page. */
  cursor?: string;
  /** Page size, integer 1..500, default 50. */
  limit?: number;
  /** Created at or after, epoch ms (UUIDv7 ids start with their creation time: a primary-key range). */
  fromMs?: number;
  /** Created before, epoch ms. */
  toMs?: number;
  /**
   * JSON object the payload must contain (PostgreSQL `@>`), already checked
   * (src/core/payload-filter.ts); requires fromMs and toMs.
   */
  payload?: string;
}

/** How long one payload search may run before it is refused (400: narrow the range or enable payloadSearch), ms. */
export const PAYLOAD_SEARCH_TIMEOUT_MS = 5000;

/** The smallest UUID of a millisecond: its 48-bit time, then zeros (UUIDv7 layout, RFC 9562 §5.7). */
export function idAtMs(ms: number): string {
  const h = Math.max(0, Math.min(2 ** 48 - 1, Math.floor(ms))).toString(16).padStart(12, '0');
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-0000-0000-000000000000`;
}

/**
 * One page of a payload search: `sluice_payload_jsonb(payload) @> $p`
 * within the created-time range (a primary-key range: ids are UUIDv7),
 * with the other filters, newest first. On a queue with payloadSearch on,
 * the planner reads its partial GIN index (src/queues/payload-search.ts);
 * elsewhere it walks the id range backwards and stops at LIMIT, so the
 * range bounds the work (≤ 31 days, and {@link PAYLOAD_SEARCH_TIMEOUT_MS}).
 * With a `project` and no queue, the project's condition filters the rows
 * of that range (src/history/common.ts projectCondition).
 */
export function payloadSearchSql(
  f: { queue?: string; status?: string; type?: string; flowId?: string; project?: string | null; payload: string; fromMs: number; toMs: number },
  afterId: string | null,
  limit: number,
): { sql: string; params: unknown[] } {
  const params: unknown[] = [];
  const param = (v: unknown) => {
    params.push(v);
    return `$${params.length}`;
  };
  const where = [`j.id >= ${param(idAtMs(f.fromMs))}::uuid`, `j.id < ${param(idAtMs(f.toMs))}::uuid`];
  if (afterId !== null) where.push(`j.id < ${param(afterId)}::uuid`);
  if (f.queue !== undefined) where.push(`j.queue = ${param(f.queue)}`);
  else if (f.project != null) where.push(projectCondition('j.queue', f.project, param));
  if (f.status !== undefined) where.push(`j.status = ${param(f.status)}`);
  if (f.type !== undefined) where.push(`j.type = ${param(f.type)}`);
  if (f.flowId !== undefined) where.push(`j.flow_id = ${param(f.flowId)}::uuid`);
  where.push(`sluice_payload_jsonb(j.payload) @> ${param(f.payload)}::jsonb`);
  return { sql: `SELECT ${JOB_SELECT} FROM jobs j WHERE ${where.join(' AND ')} ORDER BY j.id DESC LIMIT ${param(limit + 1)}`, params };
}

/**
 * Validates an optional flow id filter (lower-cased: ids are stored so).
 * @throws ValidationError when not a UUID.
 */
export function checkFlowId(flowId: string | undefined): string | undefined {
  if (flowId === undefined) return undefined;
  if (!UUID_RE.test(flowId)) throw new ValidationError('invalid flowId', [{ path: 'flowId', message: 'must be a UUID' }]);
  return flowId.toLowerCase();
}

export interface Page<T> {
  items: T[];
  /** Opaque cursor of the next page; null on the last page. */
  nextCursor: string | null;
}

/**
 * Builds the SQL of one page: every filter combination is read in id order
 * from an index and stopped by LIMIT — no OFFSET, no sort of the matches
 * (plans in docs/query-plans.md). `jobs` keeps three secondary indexes
 * (migration 1796000900000-LeanJobIndexes: each one is paid for by every
 * row the mirror writer writes), so:
 * - no filter: the primary key, backwards (UUIDv7 ids sort by creation time);
 * - a status with a queue and/or a type: `jobs_queue_status_id` or
 *   `jobs_type_status_id` directly;
 * - a queue and/or a type without a status: one LIMITed branch per status
 *   (each an ordered range of those indexes), merged by id (Merge Append);
 * - a status alone: one LIMITed range of `jobs_queue_status_id` per queue
 *   that has (had) jobs of that status — the rows of `job_counts`, which the
 *   counter trigger keeps for every (queue, status) in `jobs` — then a top-N
 *   sort of at most queues × (limit + 1) rows.
 * With a `project` (and no queue): the same, over that project's queues only:
 * - no type: one LIMITed range of `jobs_queue_status_id` per (queue,
 *   status) row of `job_counts` of the project (of the status, when given),
 *   ids only (index-only), a top-N sort of at most queues × statuses ×
 *   (limit + 1) ids, then the page's rows by primary key;
 * - a type: the plans above with the project's condition as a filter of the
 *   `jobs_type_status_id` range (as a queue filter is with a type today).
 * With a `flowId`, whatever else is given, the flow's range of `jobs_flow_id`
 * (flow_id, id DESC), with the cursor and created-time bounds: alone, read in
 * id order and stopped by LIMIT; with other filters (status, queue or
 * project, type), those are conditions on the flow's rows (≤ 1,000, read
 * first), then a top-N sort of their ids and the page's rows by primary key.
 * Fetches `limit + 1` rows to know whether a next page exists.
 * @param afterId the decoded cursor (the last id of the previous page).
 */
export function listJobsSql(
  f: { queue?: string; status?: string; type?: string; flowId?: string; project?: string | null; fromMs?: number; toMs?: number },
  afterId: string | null,
  limit: number,
): { sql: string; params: unknown[] } {
  const params: unknown[] = [];
  const param = (v: unknown) => {
    params.push(v);
    return `$${params.length}`;
  };
  const other: string[] = [];
  if (f.queue !== undefined) other.push(`queue = ${param(f.queue)}`);
  if (f.type !== undefined) other.push(`type = ${param(f.type)}`);
  const ids: string[] = [];
  if (afterId !== null) ids.push(`id < ${param(afterId)}::uuid`);
  // A created-time range is an id range (UUIDv7): an index condition of every branch below.
  if (f.fromMs !== undefined) ids.push(`id >= ${param(idAtMs(f.fromMs))}::uuid`);
  if (f.toMs !== undefined) ids.push(`id < ${param(idAtMs(f.toMs))}::uuid`);
  const where = [...other, ...ids];
  const n = param(limit + 1);
  const cond = (extra: string[]) => (extra.length ? ` WHERE ${extra.join(' AND ')}` : '');
  const project = f.queue === undefined && f.project != null ? f.project : null;
  let from: string;
  if (f.flowId !== undefined) {
    // A flow holds ≤ 1,000 jobs: its range of jobs_flow_id (with the id bounds), nothing else.
    const range = [`flow_id = ${param(f.flowId)}::uuid`, ...ids];
    const rest = [...other];
    if (f.status !== undefined) rest.push(`status = ${param(f.status)}`);
    if (project !== null) rest.push(projectCondition('queue', project, param));
    if (!rest.length) from = `(SELECT * FROM jobs${cond(range)} ORDER BY id DESC LIMIT ${n}) j`;
    else {
      // Other filters: conditions on the flow's rows only, read first (MATERIALIZED: the planner
      // may not trade the flow's range for a BitmapAnd with a status or type index, which reads
      // every job of that status or type), then a top-N sort of ≤ 1,000 ids and the page's rows by primary key.
      const flowRows = `WITH f AS MATERIALIZED (SELECT id, queue, type, status FROM jobs${cond(range)})`;
      from = `(${flowRows} SELECT f.id FROM f${cond(rest)} ORDER BY f.id DESC LIMIT ${n}) k JOIN jobs j ON j.id = k.id`;
    }
  } else if (project !== null && f.type === undefined) {
    const counts = [projectCondition('c.queue', project, param)];
    if (f.status !== undefined) counts.push(`c.status = ${param(f.status)}`);
    // Ids only (index-only ranges of jobs_queue_status_id), sorted, then the page's rows by primary key: the sort never moves whole rows.
    const ids = `SELECT k.id FROM job_counts c CROSS JOIN LATERAL (SELECT id FROM jobs${cond(['queue = c.queue', 'status = c.status', ...where])} ORDER BY id DESC LIMIT ${n}) k`;
    from = `(${ids} WHERE ${counts.join(' AND ')} ORDER BY k.id DESC LIMIT ${n}) k JOIN jobs j ON j.id = k.id`;
  } else if (project !== null) {
    where.push(projectCondition('queue', project, param));
    const statuses = f.status === undefined ? JOB_STATUSES.map((s) => `'${s}'`) : [param(f.status)];
    const branches = statuses.map((s) => `(SELECT * FROM jobs${cond([...where, `status = ${s}`])} ORDER BY id DESC LIMIT ${n})`);
    from = `(${branches.join(' UNION ALL ')}) j`;
  } else if (f.status === undefined && f.queue === undefined && f.type === undefined) from = `(SELECT * FROM jobs${cond(where)} ORDER BY id DESC LIMIT ${n}) j`;
  // Below, ids only, then the page's rows by primary key: `jobs` is partitioned by day (src/postgres/partitions.ts)
  // and, given whole rows to fetch, the planner may walk a day's primary key backwards with the queue and status as
  // a filter (cheap by its estimate when the queue is common in that day, a scan of the whole day when its rows sit
  // at the day's other end: 40 ms for a dormant queue at 10M rows); the ids alone are an index-only range.
  // With both a queue and a type no index holds every condition (the type's index has the queue as a filter): whole rows, as before.
  else if (f.status === undefined) {
    // The statuses are the core's fixed names (checked by checkStatus), inlined so each branch is planned for its own status.
    const col = f.queue !== undefined && f.type !== undefined ? '*' : 'id';
    const branches = JOB_STATUSES.map((s) => `(SELECT ${col} FROM jobs${cond([...where, `status = '${s}'`])} ORDER BY id DESC LIMIT ${n})`);
    if (col === '*') from = `(${branches.join(' UNION ALL ')}) j`;
    else from = `(SELECT k.id FROM (${branches.join(' UNION ALL ')}) k ORDER BY k.id DESC LIMIT ${n}) k JOIN jobs j ON j.id = k.id`;
  } else if (f.queue !== undefined && f.type !== undefined) {
    from = `(SELECT * FROM jobs${cond([...where, `status = ${param(f.status)}`])} ORDER BY id DESC LIMIT ${n}) j`;
  } else if (f.queue !== undefined || f.type !== undefined) {
    from = `(SELECT id FROM jobs${cond([...where, `status = ${param(f.status)}`])} ORDER BY id DESC LIMIT ${n}) k JOIN jobs j ON j.id = k.id`;
  } else {
    const s = param(f.status);
    const ids = `SELECT k.id FROM job_counts c CROSS JOIN LATERAL (SELECT id FROM jobs${cond(['queue = c.queue', 'status = c.status', ...where])} ORDER BY id DESC LIMIT ${n}) k`;
    from = `(${ids} WHERE c.status = ${s} ORDER BY k.id DESC LIMIT ${n}) k JOIN jobs j ON j.id = k.id`;
  }
  return { sql: `SELECT ${JOB_SELECT} FROM ${from} ORDER BY j.id DESC LIMIT ${n}`, params };
}

/**
 * `GET /jobs?queue=&status=&type=&flowId=&cursor=&limit=`: jobs from the Postgres
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
 * @throws ValidationError on a bad status, flowId, limit or cursor (HTTP 400).
 */
export async function listJobs(db: DataSource, filter: ListJobsFilter = {}): Promise<Page<HistoryJob>> {
  const limit = checkLimit(filter.limit);
  const status = checkStatus(filter.status);
  const afterId = filter.cursor !== undefined && filter.cursor !== '' ? decodeIdCursor(filter.cursor) : null;
  const flowId = checkFlowId(filter.flowId);
  const f = { queue: filter.queue, status, type: filter.type, flowId, project: filter.project, fromMs: filter.fromMs, toMs: filter.toMs };
  let rows: JobRow[];
  if (filter.payload !== undefined) {
    if (filter.fromMs === undefined || filter.toMs === undefined) throw new ValidationError('from and to are required with payload', [{ path: 'from', message: 'required with payload' }]);
    const { sql, params } = payloadSearchSql({ ...f, payload: filter.payload, fromMs: filter.fromMs, toMs: filter.toMs }, afterId, limit);
    rows = await boundedQuery(db, sql, params);
  } else {
    const { sql, params } = listJobsSql(f, afterId, limit);
    rows = await db.query(sql, params);
  }
  const more = rows.length > limit;
  const items = (more ? rows.slice(0, limit) : rows).map(rowToJob);
  return { items, nextCursor: more ? encodeIdCursor(items[items.length - 1].id) : null };
}
