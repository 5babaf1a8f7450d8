import type { MirrorBatch } from './projection';

/** What changed for one job in a written batch: bits of {@link JobChange}[4]. */
export const CHANGE_EVENTS = 1;
export const CHANGE_LOGS = 2;
export const CHANGE_PROGRESS = 4;

/**
 * One job changed by a batch the mirror writer committed:
 * `[id, queue, status (null when no event of the batch names one), updatedAt ms, bits]`.
 * Bits: {@link CHANGE_EVENTS} new history events, {@link CHANGE_LOGS} new
 * log lines, {@link CHANGE_PROGRESS} a progress update.
 */
export type JobChange = [string, string, string | null, number, number];

/**
 * The jobs a committed batch changed, one entry per job (its newest state in
 * the batch), as the JSON the mirror writer publishes on the job-changes
 * channel (src/dashboard/live/live-hub.ts reads it). Pure; one Map
 * operation per event and log row of the batch (measured in
 * docs/benchmarks.md, "Live updates"). Null when the batch changed nothing.
 */
export function jobChangesMessage(batch: Pick<MirrorBatch, 'events' | 'logs'>): string | null {
  if (!batch.events.length && !batch.logs.length) return null;
  const byJob = new Map<string, JobChange>();
  for (const e of batch.events) {
    const c = byJob.get(e.jobId);
    const bits = e.event === 'progress' ? CHANGE_EVENTS | CHANGE_PROGRESS : CHANGE_EVENTS;
    // progress and cancel_requested events name no new status (the projection keeps the one it has).
    const status = e.event === 'progress' || e.event === 'cancel_requested' ? null : e.to;
    if (!c) byJob.set(e.jobId, [e.jobId, e.queue, status, e.at, bits]);
    else {
      if (status !== null) c[2] = status;
      if (e.at > c[3]) c[3] = e.at;
      c[4] |= bits;
    }
  }
  for (const l of batch.logs) {
    const c = byJob.get(l.jobId);
    if (!c) byJob.set(l.jobId, [l.jobId, l.queue, null, l.at, CHANGE_LOGS]);
    else c[4] |= CHANGE_LOGS;
  }
  return JSON.stringify([...byJob.values()]);
}
