import type { RestoreJobFlow } from './restore';
import type { BackoffSpec } from '../backoff';
import type { Job, Json } from '../job';
import type { JobStatus } from '../job-status';

/** A pruned cancelled job for {@link DeadLetterStore.revive}, from its PostgreSQL copy; times epoch ms. */
export interface ReviveJobInput {
  id: string;
  queue: string;
  type: string;
  /** Payload JSON: the stored one, or the retry's new payload. */
  payload: string;
  /** True when `payload` is a new payload (it is then carried on the event). */
  newPayload: boolean;
  priority: number;
  maxAttempts: number;
  timeoutMs: number;
  backoff: BackoffSpec;
  createdAt: number;
  executionSeq: number;
  idempotencyKey: string | null;
  /** The job's concurrency key, null/absent when it has none. */
  concurrencyKey?: string | null;
  /** A flow job's fields from the history (its end then reaches the flow again); null/absent outside flows. */
  flow?: RestoreJobFlow | null;
}

/**
 * The dead-letter queue's storage port: retry (optionally with a new
 * payload), revive a pruned job from its history copy, purge. Each method is
 * one atomic step. Implemented by `src/redis/stores/dead-letter-store.ts`.
 */
export abstract class DeadLetterStore {
  /**
   * Moves a failed (or cancelled) job back to waiting with fresh attempts.
   * @throws JobNotFoundError, WrongStateError
   */
  abstract retry(queue: string, id: string, payload?: Record<string, Json>): Promise<JobStatus>;
  /**
   * {@link retry} and a read of the job in one atomic step, so the job comes
   * back exactly as the retry left it (waiting, attempts 0).
   * @throws JobNotFoundError (unknown or pruned), WrongStateError (nothing changed).
   */
  abstract retryAndGet(queue: string, id: string, payload?: Record<string, Json>): Promise<Job>;
  /**
   * Recreates a cancelled job whose stored copy was pruned, straight into waiting.
   * @returns the job as revived, or null when the store still holds it (nothing written).
   */
  abstract revive(job: ReviveJobInput): Promise<Job | null>;
  /**
   * Deletes up to `chunk` dead-letter jobs of a queue, each with a `purged`
   * event. Call until `more` is false.
   */
  abstract purge(queue: string, chunk: number): Promise<{ purged: number; more: boolean }>;
}
