import { JOB_STATUSES, JobStatus, TERMINAL_STATUSES } from '../core/job-status';

export type FlowStatus = 'running' | 'completed' | 'failed' | 'cancelled';

/**
 * A flow's status from its jobs' (docs/api.md "Workflows"): `completed` when
 * every job completed; `failed` when a job failed and none is unfinished;
 * `cancelled` when none failed, one or more were cancelled and none is
 * unfinished; else `running`. A job found nowhere (null: past retention)
 * counts as finished. A failed job is finished until a DLQ retry brings it
 * (and the dependents it cancelled) back: the flow is running again then.
 */
export function flowStatus(statuses: (JobStatus | null)[]): FlowStatus {
  if (statuses.some((s) => s !== null && !TERMINAL_STATUSES.has(s))) return 'running';
  if (statuses.includes('failed')) return 'failed';
  if (statuses.includes('cancelled')) return 'cancelled';
  return 'completed';
}

/** `{status: n}` for every job status, 0 included (a job found nowhere is not counted). */
export function statusCounts(statuses: (JobStatus | null)[]): Record<JobStatus, number> {
  const counts = Object.fromEntries(JOB_STATUSES.map((s) => [s, 0])) as Record<JobStatus, number>;
  for (const s of statuses) if (s !== null) counts[s] += 1;
  return counts;
}
