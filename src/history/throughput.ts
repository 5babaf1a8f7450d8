import type { DataSource } from 'typeorm';
import type { StoreConnection } from '../core/ports';
import { projectCondition } from './common';

/** Jobs that finished in the last minute (the dashboard's `throughput`). */
export interface Throughput {
  completedPerMin: number;
  failedPerMin: number;
}

/**
 * Jobs completed / failed (into the DLQ) since $1 (epoch ms): a range scan
 * of `job_finishes`, the per-second, per-queue counters the jobs trigger
 * keeps (migration 1796000900000-LeanJobIndexes), whole seconds: the bucket
 * of $1's second is left out.
 */
export const THROUGHPUT_SQL = `SELECT coalesce(sum(completed), 0)::float8 AS completed, coalesce(sum(failed), 0)::float8 AS failed
  FROM job_finishes WHERE bucket > to_timestamp($1::float8 / 1000)`;

/** {@link THROUGHPUT_SQL} of one project's queues: the same range, the project's condition as a filter of its (≤ 60 × queues) rows. */
export function throughputSql(project: string | null): { sql: string; params: (v: unknown) => unknown[] } {
  if (project === null) return { sql: THROUGHPUT_SQL, params: (since) => [since] };
  const extra: unknown[] = [];
  const cond = projectCondition('queue', project, (v) => {
    extra.push(v);
    return `$${extra.length + 1}`;
  });
  return { sql: `${THROUGHPUT_SQL} AND ${cond}`, params: (since) => [since, ...extra] };
}

/**
 * Throughput over the last 60 s (to the whole second), by `jobs.finished_at`
 * (Redis clock, so "now" is read from Redis TIME too). A job retried out of
 * the DLQ since no longer counts as failed; finishes not mirrored yet
 * (audit lag) are not counted.
 * @param project only this project's queues (null = every project).
 * @returns counts per minute (integers).
 * @throws when Redis or Postgres is unreachable.
 */
export async function throughput(db: DataSource, connection: StoreConnection, project: string | null = null): Promise<Throughput> {
  const now = await connection.serverTime();
  const q = throughputSql(project);
  const [r] = (await db.query(q.sql, q.params(now - 60_000))) as { completed: number; failed: number }[];
  return { completedPerMin: r.completed, failedPerMin: r.failed };
}
