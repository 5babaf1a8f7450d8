import type { DataSource } from 'typeorm';
import type { Job } from '../core/job';
import { JOB_SELECT, JobRow, projectCondition, rowToJob } from '../history/common';

/** How many jobs `GET /dashboard/recent` returns (API.md: the last 20). */
export const RECENT_LIMIT = 20;

/**
 * The last jobs by `updated_at`, over the queues of `queues` (a query of
 * `job_counts` rows: every queue that has rows in `jobs` has one, kept by its
 * trigger): for each queue the newest {@link RECENT_LIMIT} by a backward
 * range of `jobs_queue_updated_at (queue, updated_at DESC)` in each day
 * partition, merged (Merge Append, stopped by LIMIT), then the newest of
 * those. A quiet project reads its own queues' ranges only, whatever the
 * others do (it was a walk of everyone's updates: 280–400 ms at 1M rows).
 */
function recentSql(queues: string, limit: string): string {
  return `SELECT ${JOB_SELECT} FROM (SELECT DISTINCT c.queue FROM job_counts c${queues}) q
    CROSS JOIN LATERAL (SELECT * FROM jobs x WHERE x.queue = q.queue ORDER BY x.updated_at DESC LIMIT ${limit}) j
    ORDER BY j.updated_at DESC LIMIT ${limit}`;
}

/** Every project's recent jobs. $1 = limit. */
export const RECENT_JOBS_SQL = recentSql('', '$1');

/** {@link RECENT_JOBS_SQL} of one project: the queues with its prefix (src/history/common.ts projectCondition). */
export function recentJobsSql(project: string): { sql: string; params: unknown[] } {
  const params: unknown[] = [];
  const cond = projectCondition('c.queue', project, (v) => {
    params.push(v);
    return `$${params.length}`;
  });
  params.push(RECENT_LIMIT);
  return { sql: recentSql(` WHERE ${cond}`, `$${params.length}`), params };
}

/**
 * The most recently updated jobs, newest first, from the Postgres projection
 * (so they trail Redis by the audit lag).
 * @param project only this project's jobs (null = every project: the plain index scan).
 * @throws when Postgres is unreachable (HTTP 503).
 */
export async function recentJobs(db: DataSource, project: string | null = null): Promise<Job[]> {
  const q = project === null ? { sql: RECENT_JOBS_SQL, params: [RECENT_LIMIT] } : recentJobsSql(project);
  const rows: JobRow[] = await db.query(q.sql, q.params);
  return rows.map(rowToJob);
}
