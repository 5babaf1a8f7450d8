import { Inject, Injectable, OnModuleDestroy } from '@nestjs/common';
import { HistoryQueries, jobExecutions } from '../../history';
import { executionSeqOfToken } from '../../core/lock-token';
import { computeBackoffDelay } from '../../core/backoff';
import { ForbiddenError, JobNotFoundError, LeaseLostError, SluiceError } from '../../core/errors';
import type { ClaimedJob, Job, Json } from '../../core/job';
import { PayloadTooLargeError } from '../../core/job-options';
import type { SluiceConfig } from '../../config/config';
import { SLUICE_CONFIG } from '../../config/config.module';
import { ExternalWorkerSeen, JobStore, QueueStore, WakeSignals, type WakeHub } from '../../core/ports';
import { checkQueueName } from '../../queues/queue-name';
import { inProject, qualify } from '../../core/project-queue';
import type { ClaimDto } from './dto/claim.dto';
import type { CompleteDto, FailDto, HeartbeatDto, ReleaseDto } from './dto/lease.dto';
import { JobLocation, JobLocator } from './job-locator';
import { ExternalWorkerTracker } from './external-workers';
import { recordClaims, spanClock } from '../../telemetry/job-spans';
import { tracingEnabled } from '../../telemetry/spans';

/** Long polls one API process holds at once; more are refused with 429. */
export const MAX_LONG_POLLS = 1000;
/** A long poll re-claims at least this often, ms: a safety net should a wake token go astray. */
const SAFETY_POLL_MS = 5000;

/** 429 `rate_limited`: too many long polls waiting in this process. */
export class TooManyLongPollsError extends SluiceError {
  readonly retryAfterMs = 1000;
  constructor(limit: number) {
    super('rate_limited', `too many long polls waiting (${limit}); retry, or claim with waitMs 0`);
  }
}

/**
 * The external worker protocol (API.md): claim with optional long poll,
 * heartbeat (lease renewal, progress, logs), complete, fail and release. Every call
 * after the claim carries the lock token and is fenced by the Lua scripts:
 * a stale or wrong token changes nothing and answers 409 `lease_lost`.
 * Every call acts in the caller's project: a claim names a queue of it, a
 * lease call on another project's job id answers 404.
 */
@Injectable()
export class ExternalService implements OnModuleDestroy {
  private readonly hub: WakeHub;
  private readonly locator: JobLocator;
  /** Who calls the protocol, for GET /workers (written to Redis once a second, off the request path). */
  private readonly tracker: ExternalWorkerTracker;
  private longPolls = 0;

  constructor(
    @Inject(SLUICE_CONFIG) private readonly config: SluiceConfig,
    private readonly store: JobStore,
    private readonly queues: QueueStore,
    signals: WakeSignals,
    seen: ExternalWorkerSeen,
    private readonly history: HistoryQueries,
  ) {
    this.hub = signals.hub();
    this.locator = new JobLocator(store, queues, history.db);
    this.tracker = new ExternalWorkerTracker(seen);
    this.tracker.start();
  }

  /** Ends waiting long polls (they answer an empty list) before the HTTP server closes. */
  async onModuleDestroy(): Promise<void> {
    this.hub.close();
    await this.tracker.stop();
  }

  /**
   * Claims up to `max` jobs of `queue` for an external worker (external
   * queues included). With `waitMs` > 0 and nothing ready, waits for a wake-up
   * (an enqueue, a resume, a due delayed job) up to `waitMs`, then answers an
   * empty list. `signal` aborts the wait when the client disconnects; jobs a
   * claim got for a client that has gone are released (attempt refunded).
   * Each job's `traceparent` is the trace context to continue (see recordClaims).
   * @param name the bare queue name, of `project` (the claim never sees another project's jobs).
   * @param externalOnly true for a `worker` credential: it claims only from external queues (API.md v1.2; the
   *   in-process workers own the others), checked before anything is claimed.
   * @throws ValidationError (400) for a bad queue name; ForbiddenError (403) for a queue that is not external
   *   when `externalOnly`; TooManyLongPollsError (429).
   */
  async claim(name: string, body: ClaimDto, signal: AbortSignal, project: string, externalOnly = false): Promise<ClaimedJob[]> {
    const queue = qualify(project, checkQueueName(name));
    if (externalOnly && !(await this.queues.settings(queue))?.external) {
      throw new ForbiddenError(`queue ${name} is not external: worker keys claim only from external queues`);
    }
    this.tracker.claimed(body.workerId, queue);
    const max = body.max ?? 1;
    const waitMs = body.waitMs ?? 0;
    const leaseMs = body.leaseMs ?? this.config.lockTtlMs;
    const deadline = Date.now() + waitMs;
    if (waitMs > 0) {
      if (this.longPolls >= MAX_LONG_POLLS) throw new TooManyLongPollsError(MAX_LONG_POLLS);
      this.longPolls++;
    }
    try {
      for (;;) {
        if (signal.aborted || this.hub.isClosed) return [];
        const claimStart = tracingEnabled() ? spanClock() : 0;
        const res = await this.store.claim(queue, max, leaseMs, body.workerId, true);
        if (res.jobs.length > 0) {
          // A `sluice.claim` span per job; a job without a trace context answers the claim's.
          if (claimStart) recordClaims(queue, res.jobs, claimStart, body.workerId, true);
          if (signal.aborted) {
            await this.store.release(queue, body.workerId, res.jobs.map((j) => ({ id: j.id, lockToken: j.lockToken })));
            return [];
          }
          for (const j of res.jobs) this.locator.remember(j.id, { queue, workerId: body.workerId, leaseMs, lockToken: j.lockToken });
          return res.jobs;
        }
        const left = deadline - Date.now();
        if (left <= 0) return [];
        let wait = Math.min(left, SAFETY_POLL_MS);
        // The next delayed job or rate-limit window: claim again then, whoever promotes it.
        if (res.retryInMs >= 0) wait = Math.min(wait, Math.max(1, res.retryInMs));
        await this.hub.wait(queue, wait, signal);
      }
    } finally {
      if (waitMs > 0) this.longPolls--;
    }
  }

  /**
   * Renews the lease (`leaseMs` from now: the body's, else the claim's, else
   * LOCK_TTL_MS), then records progress and log lines (level info).
   * @returns the new lease expiry (epoch ms, Redis clock) and whether a client asked to cancel.
   * @throws JobNotFoundError (404); LeaseLostError (409) when the token is stale or wrong.
   */
  async heartbeat(id: string, body: HeartbeatDto, project: string): Promise<{ leaseExpiresAt: number; cancelRequested: boolean }> {
    const loc = await this.locate(id, project);
    this.tracker.seen(loc.workerId, loc.queue);
    const leaseMs = body.leaseMs ?? loc.leaseMs ?? this.config.lockTtlMs;
    const { leaseExpiresAt, statuses } = await this.store.extendLeases(loc.queue, [{ id: loc.id, lockToken: body.lockToken }], leaseMs);
    if (statuses[0] === 'lease_lost') throw new LeaseLostError(id);
    const logs = (body.logs ?? []).map((message) => ({ level: 'info', message }));
    if (body.progress !== undefined || logs.length > 0) {
      await this.store.progress(loc.queue, loc.id, body.lockToken, loc.workerId ?? '', body.progress as Json | undefined, logs);
    }
    return { leaseExpiresAt, cancelRequested: statuses[0] === 'cancel_requested' };
  }

  /**
   * Completes the attempt with `result` (a cancel requested meanwhile wins:
   * the job ends `cancelled`). Idempotent for the lease holder: the same
   * complete sent again with the same token after it landed (a retry after
   * a 503 or a timeout) answers 200 with the job as that first complete left
   * it, and changes nothing — also once the job has left Redis (see
   * {@link completedByToken}).
   * @returns the job after the call.
   * @throws JobNotFoundError (404); LeaseLostError (409); PayloadTooLargeError (413)
   *   when the serialized result is over MAX_PAYLOAD_BYTES.
   */
  async complete(id: string, body: CompleteDto, project: string): Promise<Job> {
    const loc = await this.locate(id, project);
    this.tracker.seen(loc.workerId, loc.queue);
    const result = body.result === undefined ? null : (body.result as Json);
    if (Buffer.byteLength(JSON.stringify(result)) > this.config.maxPayloadBytes) throw new PayloadTooLargeError(this.config.maxPayloadBytes);
    const [outcome] = await this.store.complete(loc.queue, loc.workerId ?? '', [{ id: loc.id, lockToken: body.lockToken, result }]);
    if (outcome === 'lease_lost') throw new LeaseLostError(id);
    // not_found: Redis pruned the job, so it has long left `active` — perhaps completed by this very token.
    if (outcome === 'not_found' && !(await this.completedByToken(loc, body.lockToken))) throw new LeaseLostError(id);
    this.locator.forget(loc.id);
    return this.read(loc);
  }

  /**
   * Whether a job Redis no longer holds was completed under `lockToken`: a
   * complete that landed, whose answer the worker did not get, sent again
   * after the mirror removed the job from Redis. Redis recognises a repeated
   * complete while it holds the job (lua/completeJobs-5.lua); after that the
   * history does: the token names its execution (src/core/lock-token.ts), and
   * that execution must have ended `completed`. The token's random part can
   * only be checked when this process answered the claim (the locator keeps
   * it); otherwise the job's queue must be external, the queues whose lease
   * calls worker keys make. A stale token (an execution that stalled, failed
   * or was released) is never taken for the holder's.
   */
  private async completedByToken(loc: JobLocation & { id: string }, lockToken: string): Promise<boolean> {
    const seq = executionSeqOfToken(lockToken);
    if (seq === null) return false;
    if (loc.lockToken !== undefined ? loc.lockToken !== lockToken : !(await this.queues.settings(loc.queue))?.external) return false;
    const { items } = await jobExecutions(this.history.db, loc.id);
    return items.some((e) => e.executionSeq === seq && e.outcome === 'completed');
  }

  /**
   * Fails the attempt. Retryable (the default) with attempts left: the job is
   * `delayed` by the job's backoff (src/core/backoff.ts, as the worker runtime
   * computes it); otherwise it goes to the dead-letter queue (`failed`). A
   * `stack` is kept as an error-level log line of the attempt.
   * @returns the job after the call.
   * @throws JobNotFoundError (404); LeaseLostError (409).
   */
  async fail(id: string, body: FailDto, project: string): Promise<Job> {
    const loc = await this.locate(id, project);
    const job = await this.store.getJob(loc.queue, loc.id);
    if (!job) throw new LeaseLostError(id);
    // Computed before the token is checked: harmless, the script refuses a stale token.
    const delayMs = computeBackoffDelay(job.backoff, job.attempts);
    const workerId = job.workerId ?? loc.workerId ?? '';
    this.tracker.seen(workerId, loc.queue);
    if (body.error.stack) {
      await this.store.progress(loc.queue, loc.id, body.lockToken, workerId, undefined, [{ level: 'error', message: body.error.stack }]);
    }
    try {
      await this.store.fail(loc.queue, loc.id, body.lockToken, {
        error: body.error.message,
        retryable: body.retryable ?? true,
        delayMs,
        reason: 'error',
        workerId,
      });
    } catch (e) {
      if (e instanceof JobNotFoundError) throw new LeaseLostError(id);
      throw e;
    }
    this.locator.forget(loc.id);
    return this.read(loc);
  }

  /**
   * Gives the job back without using an attempt (API.md v1.2): `waiting` in
   * its place, or `delayed` by `delayMs`; the attempt is refunded, the event
   * is `released` (reason `worker`) and the execution ends `released`. A
   * cancel requested meanwhile wins: the job ends `cancelled`.
   * @returns the job after the call.
   * @throws JobNotFoundError (404); LeaseLostError (409) when the token is stale or wrong, or the job is no
   *   longer active.
   */
  async release(id: string, body: ReleaseDto, project: string): Promise<Job> {
    const loc = await this.locate(id, project);
    const workerId = loc.workerId ?? '';
    this.tracker.seen(loc.workerId, loc.queue);
    const [outcome] = await this.store.release(loc.queue, workerId, [{ id: loc.id, lockToken: body.lockToken }], {
      delayMs: body.delayMs ?? 0,
      reason: 'worker',
    });
    // not_found: Redis pruned the job, so it has long left `active`.
    if (outcome === 'lease_lost' || outcome === 'not_found') throw new LeaseLostError(id);
    this.locator.forget(loc.id);
    return this.read(loc);
  }

  /** @throws JobNotFoundError (404) for an unknown id, also for a job of another project than `project`. */
  private async locate(id: string, project: string): Promise<JobLocation & { id: string }> {
    const loc = await this.locator.locate(id);
    if (!loc || !inProject(loc.queue, project)) throw new JobNotFoundError(id);
    return { ...loc, id: id.toLowerCase() };
  }

  private async read(loc: JobLocation & { id: string }): Promise<Job> {
    const job = (await this.store.getJob(loc.queue, loc.id)) ?? (await this.history.getJob(loc.id));
    if (!job) throw new JobNotFoundError(loc.id);
    return job;
  }
}
