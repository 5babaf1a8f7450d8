import type { DataSource } from 'typeorm';
import { ValidationError } from '../core/errors';
import type { TimeRange } from '../core/time-range';
import { projectCondition } from './common';

/** One point of `GET /dashboard/metrics`: jobs finished in [at, at + stepMs). */
export interface FinishPoint {
  /** Start of the bucket, epoch ms (a multiple of stepMs). */
  at: number;
  completed: number;
  failed: number;
}

export const STEP_MIN_MS = 1000;
export const STEP_MAX_MS = 86_400_000;
/** Points one series holds at most. */
export const MAX_POINTS = 2000;
/** Steps picked when the caller gives none: the smallest with at most {@link DEFAULT_POINTS} points. */
const NICE_STEPS = [1, 5, 10, 30, 60, 300, 600, 1800, 3600, 10_800, 21_600, 43_200, 86_400].map((s) => s * 1000);
const DEFAULT_POINTS = 300;

/** The default step for a window: the smallest of 1 s, 5 s, 10 s, 30 s, 1 min, 5 min, … 1 d giving ≤ 300 points. */
export function defaultStepMs(range: TimeRange): number {
  return NICE_STEPS.find((s) => (range.toMs - range.fromMs) / s <= DEFAULT_POINTS) ?? STEP_MAX_MS;
}

/**
 * The buckets of a series: aligned to multiples of `stepMs` since the epoch
 * (UTC), every bucket that overlaps [fromMs, toMs).
 * @throws ValidationError naming `stepMs` when it is not an integer
 *   1000..86400000 or gives more than {@link MAX_POINTS} points.
 */
export function seriesBuckets(range: TimeRange, stepMs: number): { first: number; count: number } {
  if (!Number.isInteger(stepMs) || stepMs < STEP_MIN_MS || stepMs > STEP_MAX_MS) {
    throw new ValidationError('invalid stepMs', [{ path: 'stepMs', message: `must be an integer ${STEP_MIN_MS}..${STEP_MAX_MS}` }]);
  }
  const first = Math.floor(range.fromMs / stepMs);
  const count = Math.floor((range.toMs - 1) / stepMs) - first + 1;
  if (count > MAX_POINTS) {
    throw new ValidationError('too many points', [{ path: 'stepMs', message: `gives ${count} points; at most ${MAX_POINTS}: use a larger step or a shorter range` }]);
  }
  return { first, count };
}

/**
 * Finishes per bucket from both counter tables: the per-second
 * `job_finishes` (the last FINISHES_KEEP_MS) and the per-minute
 * `job_finishes_minute` it is rolled up into (older; src/maintenance/retention.ts).
 * A count lives in exactly one of them, so their sum is exact; data older
 * than the per-second window has minute resolution (a minute's count goes
 * to the bucket its start falls in). Two primary-key range scans.
 * $1 = bucket start (ms), $2 = end (ms, exclusive), $3 = stepMs; then the
 * queue (`queue = $4`), or without one the project's condition (a filter of
 * the range's rows; `default`'s takes no parameter). `params(from, to, step)`
 * gives the full parameter list.
 */
export function finishSeriesSql(f: { queue?: string; project?: string | null }): { sql: string; params: (fromMs: number, toMs: number, stepMs: number) => unknown[] } {
  const extra: unknown[] = [];
  const param = (v: unknown) => {
    extra.push(v);
    return `$${extra.length + 3}`;
  };
  const q = f.queue !== undefined ? ` AND queue = ${param(f.queue)}` : f.project != null ? ` AND ${projectCondition('queue', f.project, param)}` : '';
  const range = `bucket >= to_timestamp($1::float8 / 1000) AND bucket < to_timestamp($2::float8 / 1000)${q}`;
  // date_bin on the timestamps (C, per row), the epoch arithmetic once per step: extract(epoch …) per row was 2/3 of the time.
  const sql = `SELECT round(extract(epoch FROM b) * 1000)::float8 AS at, sum(completed)::float8 AS completed, sum(failed)::float8 AS failed
    FROM (
      SELECT date_bin(make_interval(secs => $3::float8 / 1000), bucket, 'epoch') AS b, completed, failed FROM job_finishes WHERE ${range}
      UNION ALL
      SELECT date_bin(make_interval(secs => $3::float8 / 1000), bucket, 'epoch'), completed, failed FROM job_finishes_minute WHERE ${range}
    ) x GROUP BY b`;
  return { sql, params: (fromMs, toMs, stepMs) => [fromMs, toMs, stepMs, ...extra] };
}

/**
 * `GET /dashboard/metrics?queue=&from=&to=&stepMs=`: jobs completed and
 * failed (into the DLQ) per bucket, zero-filled, oldest first. Counts are
 * by `finished_at` of the jobs as they are now (a failure retried from the
 * DLQ leaves its bucket), as the dashboard's throughput counts them.
 * @param project only this project's queues (null = every project); `queue`
 *   is a qualified name (of that project).
 * @throws ValidationError (400) naming stepMs (see {@link seriesBuckets}).
 */
export async function finishSeries(db: DataSource, project: string | null, range: TimeRange, stepMs: number, queue?: string): Promise<FinishPoint[]> {
  const { first, count } = seriesBuckets(range, stepMs);
  const q = finishSeriesSql({ queue, project });
  const rows = (await db.query(q.sql, q.params(first * stepMs, (first + count) * stepMs, stepMs))) as { at: number; completed: number; failed: number }[];
  const out: FinishPoint[] = Array.from({ length: count }, (_, i) => ({ at: (first + i) * stepMs, completed: 0, failed: 0 }));
  for (const r of rows) {
    const p = out[Math.round(r.at / stepMs) - first];
    if (p) {
      p.completed += r.completed;
      p.failed += r.failed;
    }
  }
  return out;
}
