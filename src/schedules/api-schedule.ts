import type { BackoffSpec } from '../core/backoff';
import type { Json } from '../core/job';
import type { ScheduleRow } from './schedule-repository';

/** The schedule object of the API: times as ISO-8601 UTC strings. */
export interface ApiSchedule {
  id: string;
  name: string;
  cron: string;
  timezone: string;
  queue: string;
  type: string;
  payload: Record<string, Json>;
  priority: number;
  /** null: the queue's default, else MAX_RETRIES. */
  maxAttempts: number | null;
  backoff: BackoffSpec | null;
  timeoutMs: number | null;
  enabled: boolean;
  /** The next slot; null while disabled. In the past when no scheduler has run since (it fires once on recovery). */
  nextRunAt: string | null;
  /** When a job was last enqueued for this schedule. */
  lastRunAt: string | null;
  /** The slot of the newest run (its job's idempotencyKey is `schedule:<id>:<lastSlotAt>`). */
  lastSlotAt: string | null;
  lastJobId: string | null;
  createdAt: string;
  updatedAt: string;
}

const iso = (t: number | null): string | null => (t === null ? null : new Date(t).toISOString());

export function toApiSchedule(r: ScheduleRow): ApiSchedule {
  return {
    id: r.id,
    name: r.name,
    cron: r.cron,
    timezone: r.timezone,
    queue: r.queue,
    type: r.type,
    payload: r.payload,
    priority: r.priority,
    maxAttempts: r.maxAttempts,
    backoff: r.backoff,
    timeoutMs: r.timeoutMs,
    enabled: r.enabled,
    nextRunAt: r.enabled ? iso(r.nextRunAt) : null,
    lastRunAt: iso(r.lastRunAt),
    lastSlotAt: iso(r.lastSlot),
    lastJobId: r.lastJobId,
    createdAt: iso(r.createdAt) as string,
    updatedAt: iso(r.updatedAt) as string,
  };
}
