import type { ClaimedJob, Job, Json } from './job';
import type { JobStatus } from './job-status';
import type { NormalizedEnqueue } from './job-options';
import type { JobTrace } from './trace-context';

/** Source of time for code that must be testable with a fake clock. */
export interface Clock {
  /** Epoch ms. */
  now(): number;
}

export const systemClock: Clock = { now: () => Date.now() };

/** Result of enqueuing one job. */
export interface EnqueueResult {
  id: string;
  status: JobStatus | 'unknown';
  /** True when an idempotency key matched an existing job (nothing written). */
  replayed: boolean;
  /**
   * For a new job (not replayed): what the enqueue resolved on Redis's side,
   * so a caller can render the job without reading it back. Times epoch ms;
   * the options are the job's own, else its queue's, else the process's.
   */
  created?: { createdAt: number; runAt: number; maxAttempts: number; timeoutMs: number; backoff: string };
}

/** Why a claim returned fewer jobs than asked for. */
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
 * The engine's storage port. The Redis adapter (`src/redis`) is the only
 * implementation in production; every method is one atomic step.
 * Errors: JobNotFoundError, WrongStateError, LeaseLostError,
 * IdempotencyConflictError as documented per method.
 */
export interface JobStore {
  /**
   * Enqueue jobs of one queue atomically; `trace` (a request's W3C context) is stored on each.
   * @throws IdempotencyConflictError; UnavailableError when load shedding refuses the call (nothing written).
   */
  enqueue(jobs: NormalizedEnqueue[], trace?: JobTrace | null): Promise<EnqueueResult[]>;
  claim(queue: string, max: number, leaseMs: number, workerId: string, external?: boolean): Promise<ClaimResult>;
  extendLeases(queue: string, leases: { id: string; lockToken: string }[], leaseMs: number): Promise<{ leaseExpiresAt: number; statuses: LeaseStatus[] }>;
  /** A job cancelled while it ran ends `cancelled`, not `completed`. */
  complete(queue: string, workerId: string, acks: { id: string; lockToken: string; result: Json | undefined }[]): Promise<('completed' | 'cancelled' | 'lease_lost' | 'not_found')[]>;
  /** @throws LeaseLostError, JobNotFoundError */
  fail(queue: string, id: string, lockToken: string, input: FailInput): Promise<JobStatus>;
  release(queue: string, workerId: string, leases: { id: string; lockToken: string }[]): Promise<('released' | 'cancelled' | 'lease_lost' | 'not_found')[]>;
  /** @throws LeaseLostError */
  progress(queue: string, id: string, lockToken: string, workerId: string, progress: Json | undefined, logs: { level: string; message: string }[]): Promise<void>;
  /** @throws JobNotFoundError, WrongStateError */
  cancel(queue: string, id: string): Promise<JobStatus>;
  /** @throws JobNotFoundError, WrongStateError */
  retryFromDlq(queue: string, id: string, payload?: Record<string, Json>): Promise<JobStatus>;
  promoteDelayed(queue: string, limit: number): Promise<{ promoted: number; nextInMs: number }>;
  reapExpired(queue: string, limit: number): Promise<{ reaped: number; nextInMs: number }>;
  getJob(queue: string, id: string): Promise<Job | null>;
}
