import type { DataSource } from 'typeorm';
import type { Job } from '../core/job';
import { JOB_SELECT, JobRow, rowToJob } from '../audit/queries/common';

/** How many jobs `GET /dashboard/recent` returns (API.md: the last 20). */
export const RECENT_LIMIT = 20;

/**
 * The last jobs by `updated_at`: a backward scan of the `jobs_updated_at`
 * index (migration 1796000000000-AuditSchema) stopped by LIMIT, no sort.
 * $1 = limit.
 */
export const RECENT_JOBS_SQL = `SELECT ${JOB_SELECT} FROM jobs j ORDER BY j.updated_at DESC LIMIT $1`;

/**
 * The most recently updated jobs, newest first, from the Postgres projection
 * (so they trail Redis by the audit lag).
 * @throws when Postgres is unreachable (HTTP 503).
 */
export async function recentJobs(db: DataSource, limit = RECENT_LIMIT): Promise<Job[]> {
  const rows: JobRow[] = await db.query(RECENT_JOBS_SQL, [limit]);
  return rows.map(rowToJob);
}
