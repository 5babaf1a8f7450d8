import type { DataSource } from 'typeorm';
import { epochMs, UUID_RE } from './common';

/** One line a handler wrote with ctx.log() (or an external worker sent with a heartbeat). */
export interface JobLogLine {
  /** epoch ms (Redis clock). */
  at: number;
  attempt: number;
  /** e.g. info, warn, error. */
  level: string;
  message: string;
}

/** Range scan of `job_logs_job` (job_id, stream_ms, stream_seq), no sort. $1 = job id. */
export const JOB_LOGS_SQL = `SELECT ${epochMs('at')} AS at_ms, attempt, level, message FROM job_logs WHERE job_id = $1 ORDER BY stream_ms, stream_seq`;

/**
 * `GET /jobs/:id/logs`: a job's log lines, oldest first.
 * @returns `{ items }`, empty for an unknown id (existence is the caller's check).
 * @throws only when Postgres is unreachable.
 */
export async function jobLogs(db: DataSource, id: string): Promise<{ items: JobLogLine[] }> {
  if (!UUID_RE.test(id)) return { items: [] };
  const rows: any[] = await db.query(JOB_LOGS_SQL, [id.toLowerCase()]);
  return { items: rows.map((r) => ({ at: r.at_ms, attempt: r.attempt, level: r.level, message: r.message })) };
}
