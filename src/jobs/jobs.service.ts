import { Inject, Injectable } from '@nestjs/common';
import { JobNotFoundError, ValidationError, WrongStateError } from '../core/errors';
import { isTerminal, JobStatus } from '../core/job-status';
import { BackoffSpec, decodeBackoff, DEFAULT_BACKOFF } from '../core/backoff';
import type { EnqueueResult } from '../core/ports';
import type { Job, Json } from '../core/job';
import { EnqueueInput, normalizeEnqueue, NormalizedEnqueue, PayloadTooLargeError } from '../core/job-options';
import type { SluiceConfig } from '../config/config';
import { SLUICE_CONFIG } from '../config/config.module';
import { HandlerRegistry } from '../handlers/handler-registry';
import { HistoryQueries, JobEvent, JobExecution, JobLogLine, ListJobsFilter, Page } from '../history';
import { JobStore, QueueStore } from '../core/ports';
import type { EnqueueJobDto } from './dto/enqueue-job.dto';
import { WaitingCap } from './waiting-cap';
import { parsePayloadFilter } from '../core/payload-filter';
import { MAX_RANGE_MS, parseIsoTime, parseTimeRange } from '../core/time-range';
import type { JobTrace } from '../core/trace-context';
import { DEFAULT_PROJECT, inProject, projectOf, qualify } from '../core/project-queue';

/** How long a queue's `external` flag is cached for type checks, ms. */
const EXTERNAL_CACHE_MS = 1000;

/** One enqueued job as the API answers it. */
export interface Enqueued {
  job: Job;
  /** An idempotency key matched an existing job: nothing was written. */
  replayed: boolean;
  /** A debounce key matched a job not claimed yet: that job was updated instead of a new one created (API.md v1.2). */
  debounced: boolean;
}

/**
 * Job use cases behind the HTTP API: enqueue (validation against API.md,
 * registered-type check), read by id from Redis or PostgreSQL, list and
 * history from PostgreSQL, cancel. Framework
 * glue only; the rules live in src/core and the Lua scripts.
 */
@Injectable()
export class JobsService {
  private readonly externalCache = new Map<string, { external: boolean; at: number }>();

  constructor(
    @Inject(SLUICE_CONFIG) private readonly config: SluiceConfig,
    private readonly store: JobStore,
    private readonly queues: QueueStore,
    private readonly history: HistoryQueries,
    private readonly handlers: HandlerRegistry,
    private readonly cap: WaitingCap,
  ) {}

  /**
   * Validates every body first, then enqueues them (atomically per queue).
   * @param project the caller's project: each body's (bare) queue is qualified with it
   *   (src/core/project-queue.ts), and PROJECT_MAX_WAITING is counted per project.
   * @param trace the request's W3C trace context, stored on every job (src/telemetry/enqueue-trace.ts).
   * @throws ValidationError (400) naming every bad field, and for a batch its index;
   *   RateLimitedError (429) past PROJECT_MAX_WAITING (nothing written);
   *   PayloadTooLargeError (413); IdempotencyConflictError (409);
   *   UnavailableError (503) while the audit backlog is over its bound.
   */
  async enqueue(bodies: EnqueueJobDto[], batch = false, project = DEFAULT_PROJECT, trace?: JobTrace | null): Promise<Enqueued[]> {
    const normalized: NormalizedEnqueue[] = [];
    const details: { path: string; message: string }[] = [];
    for (let i = 0; i < bodies.length; i++) {
      const prefix = batch ? `jobs.${i}.` : '';
      try {
        const n = normalizeEnqueue(toInput(bodies[i]), this.config.maxPayloadBytes, prefix);
        // Below the API a queue is named with its project (src/core/project-queue.ts); `n` is this call's own object.
        n.queue = qualify(project, n.queue);
        normalized.push(n);
      } catch (e) {
        if (e instanceof PayloadTooLargeError) {
          throw batch ? Object.assign(new PayloadTooLargeError(e.limitBytes), { message: `jobs.${i}: ${e.message}` }) : e;
        }
        if (e instanceof ValidationError) details.push(...e.details);
        else throw e;
      }
    }
    if (!details.length) await this.checkTypes(normalized, batch, details);
    if (details.length) throw new ValidationError(`invalid ${batch ? 'batch' : 'job'}: ${details.map((d) => d.path).join(', ')}`, details);
    this.cap.admit(project, normalized.length);
    const results = await this.store.enqueue(normalized, trace);
    const out: Enqueued[] = new Array(results.length);
    const reads: Promise<void>[] = [];
    for (let i = 0; i < results.length; i++) {
      const r = results[i];
      // A new or debounced job is rendered from what the enqueue resolved (no read-back: the hot
      // path; a debounced job is never-claimed and now holds this request's spec); a replayed one
      // is read, since it may have moved on since it was created.
      if (r.created) {
        const job = createdJob(r.id, r.status as JobStatus, normalized[i], bodies[i].payload as Record<string, Json> | undefined, r.created);
        out[i] = { job, replayed: r.replayed, debounced: r.debounced === true };
      } else {
        reads.push(this.mustGet(r.id, normalized[i].queue).then((job) => void (out[i] = { job, replayed: r.replayed, debounced: r.debounced === true })));
      }
    }
    if (reads.length) await Promise.all(reads);
    return out;
  }

  /**
   * A job of `project` by id: Redis while live, PostgreSQL after.
   * @throws JobNotFoundError (404), also for a job of another project.
   */
  async get(id: string, project: string): Promise<Job> {
    const job = await this.history.getJob(id);
    if (!job || !inProject(job.queue, project)) throw new JobNotFoundError(id);
    return job;
  }

  /**
   * One page of `project`'s jobs from PostgreSQL, newest first
   * (HistoryQueries.listJobs); `filter.queue` is the bare name.
   * `from`/`to` (ISO) bound the created time; `payload` (a JSON object's
   * text) filters by containment and needs `from` (`to` defaults to now,
   * the range ≤ 31 days).
   * @throws ValidationError (400) on a bad status, limit, cursor, from, to or payload.
   */
  list(
    filter: Omit<ListJobsFilter, 'project' | 'fromMs' | 'toMs' | 'payload'> & { from?: string; to?: string; payload?: string },
    project: string,
  ): Promise<Page<Job>> {
    const { from, to, payload, ...rest } = filter;
    // A bare queue name becomes its qualified name; without one, the project scopes the listing.
    const scope = rest.queue !== undefined ? { ...rest, queue: qualify(project, rest.queue) } : { ...rest, project };
    if (payload === undefined) {
      const fromMs = parseIsoTime(from, 'from');
      const toMs = parseIsoTime(to, 'to');
      if (fromMs !== undefined && toMs !== undefined && fromMs >= toMs) throw new ValidationError('invalid from', [{ path: 'from', message: 'must be before to' }]);
      return this.history.listJobs({ ...scope, fromMs, toMs });
    }
    const filterJson = parsePayloadFilter(payload);
    const range = parseTimeRange({ from, to }, Date.now(), { maxSpanMs: MAX_RANGE_MS });
    return this.history.listJobs({ ...scope, fromMs: range.fromMs, toMs: range.toMs, payload: filterJson });
  }

  /**
   * A job's audit trail, executions or log lines, oldest first (as mirrored so far).
   * @throws JobNotFoundError (404) when the job is unknown.
   */
  async events(id: string, project: string): Promise<JobEvent[]> {
    await this.history.settle([(await this.get(id, project)).queue]);
    return (await this.history.jobEvents(id)).items;
  }

  /** @see events */
  async executions(id: string, project: string): Promise<JobExecution[]> {
    await this.history.settle([(await this.get(id, project)).queue]);
    return (await this.history.jobExecutions(id)).items;
  }

  /** @see events */
  async logs(id: string, project: string): Promise<JobLogLine[]> {
    await this.history.settle([(await this.get(id, project)).queue]);
    return (await this.history.jobLogs(id)).items;
  }

  /**
   * Cancels a job (lua/cancelJob-4.lua). waiting/delayed/blocked: cancelled at once
   * (`requested` false); active: a cancel request, the holder's AbortSignal
   * fires and the job ends cancelled (`requested` true).
   * @returns the job as the cancel left it (read in the same MULTI).
   * @throws JobNotFoundError (404); WrongStateError (409) for a terminal job,
   *   also one Redis has pruned since (its PostgreSQL copy says which state).
   */
  async cancel(id: string, project: string): Promise<{ job: Job; requested: boolean }> {
    const job = await this.get(id, project);
    if (isTerminal(job.status)) throw new WrongStateError(id, job.status, 'cancel');
    try {
      const r = await this.store.cancelAndGet(job.queue, id);
      return { job: r.job, requested: r.status === 'active' };
    } catch (e) {
      if (!(e instanceof JobNotFoundError)) throw e;
      // Finished and pruned from Redis between our read and the script: PostgreSQL has its end.
      const now = await this.get(id, project);
      throw new WrongStateError(id, isTerminal(now.status) ? now.status : `${now.status} in the history but not live in Redis`, 'cancel');
    }
  }

  /** Reads a just-enqueued job; it may already be finished and pruned from Redis. */
  private async mustGet(id: string, queue: string): Promise<Job> {
    return (await this.store.getJob(queue, id)) ?? this.get(id, projectOf(queue));
  }

  /**
   * API.md: `type` must name a registered handler unless the queue is external
   * (queues project-qualified). Adds one detail per job that fails, at `type`,
   * or `jobs.<i>.type` when `batch` (a batch, a flow).
   */
  async checkTypes(jobs: NormalizedEnqueue[], batch: boolean, details: { path: string; message: string }[]): Promise<void> {
    const known = this.handlers.map;
    for (let i = 0; i < jobs.length; i++) {
      if (known.get(jobs[i].type)) continue;
      if (await this.isExternal(jobs[i].queue)) continue;
      details.push({
        path: `${batch ? `jobs.${i}.` : ''}type`,
        message: `no handler is registered for "${jobs[i].type}" (known types: ${this.handlers.types().join(', ') || 'none'}); an external queue accepts any type`,
      });
    }
  }

  private async isExternal(queue: string): Promise<boolean> {
    const c = this.externalCache.get(queue);
    if (c && Date.now() - c.at < EXTERNAL_CACHE_MS) return c.external;
    const settings = await this.queues.settings(queue);
    const external = settings?.external ?? false;
    this.externalCache.set(queue, { external, at: Date.now() });
    return external;
  }
}

/** DTO → core input: `runAt` ISO → epoch ms (validated as ISO-8601 by the DTO). */
// `null` means "not set" for every optional field (class-validator's @IsOptional lets it through).
export function toInput(b: EnqueueJobDto): EnqueueInput {
  return {
    type: b.type,
    payload: b.payload as Record<string, Json> | undefined,
    queue: b.queue ?? undefined,
    priority: b.priority ?? undefined,
    delayMs: b.delayMs ?? undefined,
    runAt: b.runAt === undefined || b.runAt === null ? undefined : Date.parse(b.runAt),
    maxAttempts: b.maxAttempts ?? undefined,
    // Only the fields the client sent: the rest take the defaults.
    backoff: b.backoff ? (Object.fromEntries(Object.entries(b.backoff).filter(([, v]) => v !== undefined && v !== null)) as EnqueueInput['backoff']) : undefined,
    timeoutMs: b.timeoutMs ?? undefined,
    idempotencyKey: b.idempotencyKey ?? undefined,
    concurrencyKey: b.concurrencyKey ?? undefined,
    // Only the fields the client sent (the DTO instance has no others: unknown ones are refused).
    debounce: b.debounce
      ? (Object.fromEntries(Object.entries(b.debounce).filter(([, v]) => v !== undefined && v !== null)) as EnqueueInput['debounce'])
      : undefined,
  };
}

/**
 * The job as it was just created, or just updated by a debounce (then `c` has
 * its first enqueue's createdAt and the update's time as updatedAt): its state
 * at enqueue time (a worker may have taken it since).
 */
export function createdJob(id: string, status: JobStatus, n: NormalizedEnqueue, payload: Record<string, Json> | undefined, c: NonNullable<EnqueueResult['created']>): Job {
  let backoff: BackoffSpec;
  try {
    backoff = decodeBackoff(c.backoff);
  } catch {
    backoff = { ...DEFAULT_BACKOFF };
  }
  return {
    id,
    queue: n.queue,
    type: n.type,
    payload: payload ?? {},
    status,
    priority: n.priority,
    attempts: 0,
    maxAttempts: c.maxAttempts,
    backoff,
    timeoutMs: c.timeoutMs,
    idempotencyKey: n.idempotencyKey ?? null,
    concurrencyKey: n.concurrencyKey ?? null,
    flowId: n.flow?.flowId ?? null,
    flowRef: n.flow?.ref ?? null,
    progress: null,
    result: null,
    lastError: null,
    workerId: null,
    createdAt: c.createdAt,
    runAt: c.runAt,
    startedAt: null,
    finishedAt: null,
    updatedAt: c.updatedAt ?? c.createdAt,
    executionSeq: 0,
    cancelRequested: false,
  };
}
