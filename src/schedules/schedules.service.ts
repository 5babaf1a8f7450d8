import { Inject, Injectable } from '@nestjs/common';
import type { DataSource } from 'typeorm';
import { v7 as uuidv7 } from 'uuid';
import { POSTGRES_DB } from '../postgres/postgres.module';
import type { SluiceConfig } from '../config/config';
import { LOGGER, SLUICE_CONFIG } from '../config/config.module';
import { SluiceError, ValidationError } from '../core/errors';
import { JobStore, QueueStore, ScheduleSignals, type Clock } from '../core/ports';
import { CronSlots } from '../core/schedule-slots';
import { HandlerRegistry } from '../handlers/handler-registry';
import type { Logger } from '../logging/logger';
import type { Job } from '../core/job';
import type { JobStatus } from '../core/job-status';
import { createdJob } from '../jobs/jobs.service';
import { ScheduleInput, scheduleJob, validateSchedule } from './schedule-definition';
import { SCHEDULE_CLOCK } from './schedule-clock';
import { bareQueue, qualify } from '../core/project-queue';
import { ScheduleRepository, ScheduleRow } from './schedule-repository';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
/** Fields PATCH may not set to null (the nullable ones reset to defaults instead). */
const NOT_NULL = ['name', 'cron', 'timezone', 'queue', 'type', 'payload', 'priority', 'enabled'] as const;

/**
 * Schedule use cases behind the HTTP API, each within the caller's project:
 * names are unique per project, the row's `queue` is the qualified name
 * (src/core/project-queue.ts) the scheduler enqueues into, another
 * project's schedule id → 404. Each change bumps nothing in
 * Redis but a pub/sub notice, so the schedulers reload at once (they also
 * reload every few seconds, and every slot claim re-checks the row).
 */
@Injectable()
export class SchedulesService {
  readonly repo: ScheduleRepository;

  constructor(
    @Inject(SLUICE_CONFIG) private readonly config: SluiceConfig,
    @Inject(LOGGER) private readonly log: Logger,
    @Inject(POSTGRES_DB) db: DataSource,
    private readonly signals: ScheduleSignals,
    @Inject(SCHEDULE_CLOCK) private readonly clock: Clock,
    private readonly store: JobStore,
    private readonly queues: QueueStore,
    private readonly handlers: HandlerRegistry,
  ) {
    this.repo = new ScheduleRepository(db);
  }

  /**
   * Creates a schedule; `nextRunAt` is the first slot after now (null when disabled).
   * @throws ValidationError (400) naming each bad field; PayloadTooLargeError (413);
   *   SluiceError `conflict` (409) for a duplicate name in the project.
   */
  async create(input: ScheduleInput, project: string): Promise<ScheduleRow> {
    const { def, slots } = this.validate(input, project);
    await this.checkType(def.queue, def.type);
    const now = this.clock.now();
    const row = await this.repo.insert(uuidv7(), project, def, def.enabled ? slots.nextAfter(now) : null, now);
    await this.notify(row.id);
    return row;
  }

  list(project: string): Promise<ScheduleRow[]> {
    return this.repo.list(project);
  }

  /** @throws SluiceError `not_found` (404), also for another project's schedule. */
  async get(id: string, project: string): Promise<ScheduleRow> {
    const row = UUID.test(id) ? await this.repo.get(id, project) : null;
    if (!row) throw notFound(id);
    return row;
  }

  /**
   * Applies a partial change. A new cron, time zone or a re-enable computes
   * `nextRunAt` from now: slots missed while disabled are not fired.
   * @throws as {@link create}, and `not_found` (404).
   */
  async update(id: string, patch: Partial<ScheduleInput>, project: string): Promise<ScheduleRow> {
    const cur = await this.get(id, project);
    const nulls = NOT_NULL.filter((k) => patch[k] === null);
    if (nulls.length) throw new ValidationError('invalid schedule', nulls.map((path) => ({ path, message: 'must not be null' })));
    const pick = <K extends keyof ScheduleInput>(k: K, v: ScheduleInput[K]) => (patch[k] === undefined ? v : patch[k]);
    const merged: ScheduleInput = {
      name: pick('name', cur.name) as string,
      cron: pick('cron', cur.cron) as string,
      timezone: pick('timezone', cur.timezone),
      queue: pick('queue', bareQueue(cur.queue)),
      type: pick('type', cur.type) as string,
      payload: pick('payload', cur.payload),
      priority: pick('priority', cur.priority),
      maxAttempts: pick('maxAttempts', cur.maxAttempts),
      backoff: pick('backoff', cur.backoff),
      timeoutMs: pick('timeoutMs', cur.timeoutMs),
      concurrencyKey: pick('concurrencyKey', cur.concurrencyKey),
      enabled: pick('enabled', cur.enabled),
    };
    const { def, slots } = this.validate(merged, project);
    if (def.queue !== cur.queue || def.type !== cur.type) await this.checkType(def.queue, def.type);
    const now = this.clock.now();
    const retime = def.cron !== cur.cron || def.timezone !== cur.timezone || (def.enabled && !cur.enabled) || cur.nextRunAt === null;
    const nextRunAt = !def.enabled ? null : retime ? slots.nextAfter(now) : cur.nextRunAt;
    const row = await this.repo.update(id, project, def, nextRunAt, now);
    if (!row) throw notFound(id);
    await this.notify(id);
    return row;
  }

  /** Deletes a schedule: no slot of it fires after this returns. @throws `not_found` (404). */
  async remove(id: string, project: string): Promise<ScheduleRow> {
    const row = UUID.test(id) ? await this.repo.delete(id, project) : null;
    if (!row) throw notFound(id);
    await this.notify(id);
    return row;
  }

  /**
   * Runs a schedule now (a manual run, also of a disabled schedule): enqueues
   * its job (queue, type, payload, priority, maxAttempts, backoff, timeoutMs, concurrencyKey)
   * through the store the scheduler uses, but with no idempotency key, since a
   * manual run is no slot: `nextRunAt`, `lastSlotAt` and `lastRunAt` are left
   * alone. The job does not record it came from a manual run; the operator
   * audit log (`schedule.run`) does, and the missing `schedule:<id>:<slot>` key
   * tells it from a slot's job.
   * @returns the enqueued job (status waiting, unless a worker took it already).
   * @throws SluiceError `not_found` (404), also for another project's schedule;
   *   UnavailableError (503) while enqueues are refused (audit backlog).
   */
  async run(id: string, project: string): Promise<Job> {
    const row = await this.get(id, project);
    const job = scheduleJob(row);
    const [r] = await this.store.enqueue([job]);
    if (r.created) return createdJob(r.id, r.status as JobStatus, job, row.payload, r.created);
    const read = await this.store.getJob(job.queue, r.id);
    if (!read) throw new SluiceError('not_found', `job ${r.id} not found`);
    return read;
  }

  /**
   * The next `count` runs at or after `from` (epoch ms; default now).
   * @throws ValidationError naming `cron` or `timezone`.
   */
  preview(cron: string, timezone: string, from: number | undefined, count: number): number[] {
    return CronSlots.compile({ cron, timezone }).preview(from ?? this.clock.now(), count);
  }

  /** validateSchedule, then the definition's queue qualified with `project` (what the slots enqueue into). */
  private validate(input: ScheduleInput, project: string): ReturnType<typeof validateSchedule> {
    const v = validateSchedule(input, this.config.maxPayloadBytes);
    return { ...v, def: { ...v.def, queue: qualify(project, v.def.queue) } };
  }

  /** Same rule as POST /jobs: a registered handler, unless the (qualified) queue is external. */
  private async checkType(queue: string, type: string): Promise<void> {
    if (this.handlers.map.get(type)) return;
    if ((await this.queues.settings(queue))?.external) return;
    throw new ValidationError('invalid schedule: type', [
      { path: 'type', message: `no handler is registered for "${type}" (known types: ${this.handlers.types().join(', ') || 'none'}); an external queue accepts any type` },
    ]);
  }

  /** Tells the schedulers to reload now; if Redis misses it, their periodic reload does. */
  private async notify(id: string): Promise<void> {
    await this.signals.announce(id).catch((e: Error) => this.log.debug({ err: e.message }, 'schedule change not announced'));
  }
}

function notFound(id: string): SluiceError {
  return new SluiceError('not_found', `schedule ${id} not found`);
}
