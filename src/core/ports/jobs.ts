import type { ClaimedJob, Job, Json, WorkerJob } from '../job';
import type { JobStatus } from '../job-status';
import type { NormalizedEnqueue } from '../job-options';
import type { JobTrace } from '../trace-context';

/** Result of enqueuing one job. */
export interface EnqueueResult {
  id: string;
  status: JobStatus | 'unknown';
  /** True when an idempotency key matched an existing job (nothing written). */
  replayed: boolean;
  /**
   * True when the job's debounce key (API.md v1.2) was held by a job still
   * waiting or delayed: that job was updated instead of a new one created
   * (`id` is the existing job's; HTTP 200 with `Sluice-Debounced: true`).
   */
  debounced?: boolean;
  /**
   * For a new job (not replayed), or one updated by debounce: what the
   * enqueue resolved on Redis's side, so a caller can render the job without
   * reading it back. Times epoch ms; the options are the job's own, else its
   * queue's, else the process's. For a debounced job: its first enqueue's
   * createdAt, its new runAt and options, and `updatedAt` (the update's time).
   */
  created?: { createdAt: number; runAt: number; maxAttempts: number; timeoutMs: number; backoff: string; updatedAt?: number };
}

/**
 * What a claim reports besides its jobs. `solo`: the one job returned must run
 * alone (its previous lease expired, so it may crash its worker). `isolate`:
 * the next job must run alone; claim again once the caller holds no job.
 */
export type ClaimBlock = 'none' | 'paused' | 'concurrency' | 'rate_limited' | 'external' | 'solo' | 'isolate';

export interface ClaimResult {
  jobs: ClaimedJob[];
  /** Jobs popped from the waiting set that could not be decoded (dead-lettered by the store). */
  block: ClaimBlock;
  /**
   * When to try again at the latest, ms: the time until the next delayed job
   * is due, or until the rate-limit window ends. -1 when nothing is scheduled.
   */
  retryInMs: number;
}

/** Outcome of a heartbeat for one job. */
export type LeaseStatus = 'ok' | 'cancel_requested' | 'lease_lost';

export interface FailInput {
  error: string;
  /** false = unrecoverable: straight to the dead-letter queue. */
  retryable: boolean;
  /** Backoff before the retry, ms (see core/backoff.ts). */
  delayMs: number;
  reason: 'error' | 'timeout' | 'cancelled' | 'decode_error';
  workerId: string;
}

/**
 * Admission control for enqueue: returns null to admit the call, or the
 * reason it is refused (the message of the UnavailableError enqueue throws).
 */
export type AdmissionCheck = () => string | null;

/** Per-job outcome of {@link JobStore.complete}. */
export type CompleteOutcome = 'completed' | 'cancelled' | 'lease_lost' | 'not_found';

/** Per-job outcome of {@link JobStore.release}. */
export type ReleaseOutcome = 'released' | 'cancelled' | 'lease_lost' | 'not_found';

/** How {@link JobStore.release} gives jobs back. */
export interface ReleaseOptions {
  /** Run again no sooner than this many ms from now (the job is `delayed`); 0 or absent: `waiting` at once. */
  delayMs?: number;
  /** Recorded on the `released` event: `shutdown` (an in-process worker stopping, the default) or `worker` (an external worker's call). */
  reason?: 'shutdown' | 'worker';
}

/** What {@link JobStore.claimForWorker} returns: only what an in-process worker needs. */
export interface WorkerClaimResult {
  jobs: WorkerJob[];
  block: ClaimBlock;
  retryInMs: number;
}

/** The cheap part of a job: its status and the worker that last claimed it. */
export interface JobBrief {
  status: string;
  workerId: string | null;
  /** Lease length of an external claim, ms (absent for in-process claims). */
  leaseMs?: number;
}

/**
 * The engine's storage port for one job's life: enqueue, claim, leases,
 * acks, cancel, promotion and the reaper. The Redis adapter
 * (`src/redis/stores/job-store.ts`) is the only implementation; every method
 * is one atomic step (one Lua script, lua/).
 * Errors: JobNotFoundError, WrongStateError, LeaseLostError,
 * IdempotencyConflictError, UnavailableError as documented per method.
 */
export abstract class JobStore {
  /**
   * Enqueue jobs (several queues allowed; each queue's jobs atomically); `trace`
   * (a request's W3C context) is stored on each. Results in input order.
   * @throws IdempotencyConflictError; UnavailableError when the admission check refuses the call (nothing written).
   */
  abstract enqueue(jobs: NormalizedEnqueue[], trace?: JobTrace | null): Promise<EnqueueResult[]>;
  /**
   * Installs the check {@link enqueue} consults before it writes anything
   * (load shedding); `null` removes it. It runs synchronously on every call,
   * so it must answer from memory.
   */
  abstract setAdmission(check: AdmissionCheck | null): void;
  /**
   * Claims up to `max` jobs under a lease of `leaseMs` (full jobs, as the API serves them).
   * `external`: the caller is an external worker (only external queues answer).
   */
  abstract claim(queue: string, max: number, leaseMs: number, workerId: string, external?: boolean): Promise<ClaimResult>;
  /** Like {@link claim}, with only what a worker needs; `idle`: the worker holds no job (it may get one that runs alone). */
  abstract claimForWorker(queue: string, max: number, leaseMs: number, workerId: string, idle?: boolean): Promise<WorkerClaimResult>;
  /** Renews leases to now + `leaseMs`; a status per lease (a lost lease is not renewed). */
  abstract extendLeases(queue: string, leases: { id: string; lockToken: string }[], leaseMs: number): Promise<{ leaseExpiresAt: number; statuses: LeaseStatus[] }>;
  /** A job cancelled while it ran ends `cancelled`, not `completed`. */
  abstract complete(queue: string, workerId: string, acks: { id: string; lockToken: string; result: Json | undefined }[]): Promise<CompleteOutcome[]>;
  /** @throws LeaseLostError, JobNotFoundError */
  abstract fail(queue: string, id: string, lockToken: string, input: FailInput): Promise<JobStatus>;
  /**
   * Hands jobs back without using an attempt (refunded): `waiting` in their
   * original place, or `delayed` with `opts.delayMs`; a job with a pending
   * cancel request ends `cancelled`. Fenced by each lock token.
   */
  abstract release(queue: string, workerId: string, leases: { id: string; lockToken: string }[], opts?: ReleaseOptions): Promise<ReleaseOutcome[]>;
  /** @throws LeaseLostError */
  abstract progress(queue: string, id: string, lockToken: string, workerId: string, progress: Json | undefined, logs: { level: string; message: string }[]): Promise<void>;
  /** @throws JobNotFoundError, WrongStateError */
  abstract cancel(queue: string, id: string): Promise<JobStatus>;
  /**
   * {@link cancel} and a read of the job in one atomic step, so the job comes
   * back exactly as the cancel left it.
   * @throws JobNotFoundError, WrongStateError (terminal; nothing changed).
   */
  abstract cancelAndGet(queue: string, id: string): Promise<{ status: JobStatus; job: Job }>;
  /** Moves due delayed jobs to waiting; `nextInMs`: until the next one is due, -1 when none. */
  abstract promoteDelayed(queue: string, limit: number): Promise<{ promoted: number; nextInMs: number }>;
  /** Moves jobs whose lease expired back to waiting (or the DLQ); `nextInMs` as above. */
  abstract reapExpired(queue: string, limit: number): Promise<{ reaped: number; nextInMs: number }>;
  /**
   * @returns null when the store no longer holds the job.
   * A corrupted job is decoded leniently (it stays readable).
   */
  abstract getJob(queue: string, id: string): Promise<Job | null>;
  /** @returns null when this queue holds no such job. */
  abstract jobBrief(queue: string, id: string): Promise<JobBrief | null>;
}
