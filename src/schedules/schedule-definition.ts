import type { BackoffSpec } from '../core/backoff';
import { ValidationError } from '../core/errors';
import type { Json } from '../core/job';
import { normalizeEnqueue, NormalizedEnqueue } from '../core/job-options';
import { CronSlots } from '../core/schedule-slots';
import type { ScheduleDefinition, ScheduleRow } from './schedule-repository';

/** What a client sends for a schedule (POST body; PATCH merges into the stored one). */
export interface ScheduleInput {
  name: string;
  cron: string;
  timezone?: string;
  queue?: string;
  type: string;
  payload?: Record<string, Json>;
  priority?: number | 'high' | 'normal' | 'low';
  maxAttempts?: number | null;
  backoff?: Partial<BackoffSpec> | null;
  timeoutMs?: number | null;
  /** The jobs' concurrency key; null or absent = none. */
  concurrencyKey?: string | null;
  enabled?: boolean;
}

/**
 * Validates a schedule: cron and zone (core/schedule-slots.ts), and the job
 * it enqueues with the same rules as `POST /jobs` (core/job-options.ts).
 * @returns the definition to store (priority resolved to a number, backoff
 *   with its defaults filled in) and the compiled slots.
 * @throws ValidationError listing every bad field (`cron`, `timezone`,
 *   `queue`, `type`, `priority`, ...); PayloadTooLargeError (413).
 */
export function validateSchedule(input: ScheduleInput, maxPayloadBytes: number): { def: ScheduleDefinition; slots: CronSlots } {
  const details: { path: string; message: string }[] = [];
  let slots: CronSlots | undefined;
  const timezone = input.timezone ?? 'UTC';
  try {
    slots = CronSlots.compile({ cron: input.cron, timezone });
  } catch (e) {
    if (!(e instanceof ValidationError)) throw e;
    details.push(...e.details);
  }
  let job: NormalizedEnqueue | undefined;
  try {
    job = normalizeEnqueue(
      {
        type: input.type,
        payload: input.payload,
        queue: input.queue,
        priority: input.priority,
        maxAttempts: input.maxAttempts ?? undefined,
        backoff: (input.backoff ?? undefined) as BackoffSpec | undefined,
        timeoutMs: input.timeoutMs ?? undefined,
        concurrencyKey: input.concurrencyKey ?? undefined,
      },
      maxPayloadBytes,
    );
  } catch (e) {
    // PayloadTooLargeError is a ValidationError with its own code (413): let it through.
    if (!(e instanceof ValidationError) || e.code !== 'validation_failed') throw e;
    details.push(...e.details);
  }
  if (typeof input.name !== 'string' || input.name.trim().length === 0 || input.name.length > 200) {
    details.push({ path: 'name', message: 'must be a non-empty string of at most 200 characters' });
  }
  if (details.length || !slots || !job) throw new ValidationError(`invalid schedule: ${details.map((d) => d.path).join(', ')}`, details);
  return {
    slots,
    def: {
      name: input.name,
      cron: slots.cron,
      timezone,
      queue: job.queue,
      type: job.type,
      payload: JSON.parse(job.payloadJson) as Record<string, Json>,
      priority: job.priority,
      maxAttempts: job.maxAttempts ?? null,
      backoff: job.backoff ?? null,
      timeoutMs: job.timeoutMs ?? null,
      concurrencyKey: job.concurrencyKey ?? null,
      enabled: input.enabled ?? true,
    },
  };
}

/**
 * The idempotency key of one (schedule, slot): the job carries it, so the
 * slot it was made for is visible on the job (`schedule:<id>:<slot ISO>`).
 */
export function slotKey(scheduleId: string, slot: number): string {
  return `schedule:${scheduleId}:${new Date(slot).toISOString()}`;
}

/** The job a schedule enqueues for `slot`. */
export function slotJob(row: ScheduleRow, slot: number): NormalizedEnqueue {
  return { ...scheduleJob(row), idempotencyKey: slotKey(row.id, slot) };
}

/**
 * The job a schedule enqueues, without a slot's idempotency key: what a
 * manual run (`POST /schedules/:id/run`) enqueues as is.
 */
export function scheduleJob(row: ScheduleRow): NormalizedEnqueue {
  return {
    queue: row.queue,
    type: row.type,
    payloadJson: JSON.stringify(row.payload),
    priority: row.priority,
    maxAttempts: row.maxAttempts ?? undefined,
    backoff: row.backoff ?? undefined,
    timeoutMs: row.timeoutMs ?? undefined,
    concurrencyKey: row.concurrencyKey ?? undefined,
  };
}
