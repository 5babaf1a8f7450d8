import type { DataSource } from 'typeorm';
import type { Job } from '../core/job';
import { JOB_SELECT, JobRow, projectCondition, rowToJob } from '../history/common';

/** How many jobs `GET /dashboard/recent` returns (API.md: the last 20). */
export const RECENT_LIMIT = 20;

/**
 * The last jobs by `updated_at`: a backward scan of the `jobs_updated_at`
 * index (migration 1796000000000-AuditSchema) stopped by LIMIT, no sort.
 * $1 = limit.
 */
export const RECENT_JOBS_SQL = `SELECT ${JOB_SELECT} FROM jobs j ORDER BY j.updated_at DESC LIMIT $1`;

/**
 * {@link RECENT_JOBS_SQL} of one project: the same backward scan of
 * `jobs_updated_at`, the project's condition as a filter. It reads the rows
 * updated since the project's 20th most recent update: cheap while the
 * project is busy, up to every row of the retention window for a project that
 * has been idle while others worked (see docs/query-plans.md).
 */
export function recentJobsSql(project: string): { sql: string; params: unknown[] } {
  const params: unknown[] = [];
  const cond = projectCondition('j.queue', project, (v) => {
    params.push(v);
    return `$${params.length}`;
  });
  params.push(RECENT_LIMIT);
  return { sql: `SELECT ${JOB_SELECT} FROM jobs j WHERE ${cond} ORDER BY j.updated_at DESC LIMIT $${params.length}`, params };
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
