import { iso, WithIsoTimes } from '../http/api-job';
import type { ScheduleRow } from './schedule-repository';
import { bareQueue } from '../core/project-queue';

/**
 * The schedule object of the API: the row's definition and run times, times
 * as ISO-8601 UTC strings. `nextRunAt` is null while disabled (and may lie in
 * the past when no scheduler has run since: it fires once on recovery);
 * `lastSlotAt` is the slot of the newest run (its job's idempotencyKey is
 * `schedule:<id>:<lastSlotAt>`). The scheduler's bookkeeping (claim lease,
 * revision) stays internal.
 */
export type ApiSchedule = WithIsoTimes<Omit<ScheduleRow, 'lastSlot' | 'claimUntil' | 'revision'>, 'nextRunAt' | 'lastRunAt' | 'createdAt' | 'updatedAt'> & {
  lastSlotAt: string | null;
};

export function toApiSchedule(r: ScheduleRow): ApiSchedule {
  // Everything but the scheduler's bookkeeping.
  // eslint-disable-next-line @typescript-eslint/no-unused-vars
  const { lastSlot, claimUntil, revision, ...rest } = r;
  return {
    ...rest,
    // The bare name its project's clients use (src/core/project-queue.ts).
    queue: bareQueue(r.queue),
    nextRunAt: r.enabled ? iso(r.nextRunAt) : null,
    lastRunAt: iso(r.lastRunAt),
    lastSlotAt: iso(lastSlot),
    createdAt: iso(r.createdAt),
    updatedAt: iso(r.updatedAt),
  };
}
