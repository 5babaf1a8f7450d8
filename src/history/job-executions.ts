import type { DataSource } from 'typeorm';
import { epochMs, UUID_RE } from './common';

/** One execution (physical run) of a job, the API.md shape (times epoch ms). */
export interface JobExecution {
  /** 1-based run number of the job (`executionSeq` handlers receive). */
  executionSeq: number;
  attempt: number;
  workerId: string | null;
  startedAt: number;
  /** null while running. */
  finishedAt: number | null;
  /** completed, failed, timeout, stalled, released, cancelled, running. */
  outcome: string;
  error: string | null;
  /** Run time in ms; null while running. */
  durationMs: number | null;
}

/** Primary key range scan (job_id, execution_seq), no sort. $1 = job id. */
export const JOB_EXECUTIONS_SQL = `SELECT execution_seq, attempt, worker_id, ${epochMs('started_at')} AS started_ms, ${epochMs('finished_at')} AS finished_ms,
  outcome, error, duration_ms FROM job_executions WHERE job_id = $1 ORDER BY execution_seq`;

/**
 * `GET /jobs/:id/executions`: one row per execution started, in run order.
 * @returns `{ items }`, empty for an unknown id (existence is the caller's check).
 * @throws only when Postgres is unreachable.
 */
export async function jobExecutions(db: DataSource, id: string): Promise<{ items: JobExecution[] }> {
  if (!UUID_RE.test(id)) return { items: [] };
  const rows: any[] = await db.query(JOB_EXECUTIONS_SQL, [id.toLowerCase()]);
  return {
    items: rows.map((r) => ({
      executionSeq: r.execution_seq,
      attempt: r.attempt,
      workerId: r.worker_id,
      startedAt: r.started_ms,
      finishedAt: r.finished_ms,
      outcome: r.outcome,
      error: r.error,
      durationMs: r.duration_ms,
    })),
  };
}
