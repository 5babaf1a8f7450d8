/** One job for {@link RestoreStore.restoreJobs}; times are epoch ms. */
export interface RestoreJobInput {
  id: string;
  /** Its state in PostgreSQL; `cancel` = active with a pending cancel request. */
  kind: 'waiting' | 'delayed' | 'active' | 'cancel' | 'failed';
  type: string;
  payload: string;
  priority: number;
  maxAttempts: number;
  timeoutMs: number;
  /** Encoded backoff (src/core/backoff.ts encodeBackoff). */
  backoff: string;
  attempts: number;
  executionSeq: number;
  createdAt: number;
  runAt: number;
  idempotencyKey: string | null;
  lastError: string | null;
  workerId: string | null;
  startedAt: number | null;
  failedAt: number | null;
  updatedAt: number;
}

/** Outcome of one restoreJobs call: counts of jobs recreated per kind, and skipped (already there). */
export type RestoreJobsResult =
  | { status: 'ok'; waiting: number; delayed: number; active: number; failed: number; cancelled: number; skipped: number }
  | { status: 'lock_lost' | 'already_restored' };

/**
 * The hot store's side of a restore from PostgreSQL (src/restore): each
 * queue's epoch marker (present while the store holds the queue's data) and
 * the recreation of jobs. Implemented by `src/redis/stores/restore-store.ts`.
 */
export abstract class RestoreStore {
  /** The queue's epoch marker, or null when the store lost (or never had) the queue. */
  abstract epoch(queue: string): Promise<string | null>;
  /** Sets the marker if absent. @returns false when another process set one first. */
  abstract createEpoch(queue: string, epoch: string): Promise<boolean>;
  /** Puts the queue (back) in the queue registry (no cache: after a loss the registry is empty). */
  abstract relist(queue: string): Promise<void>;
  /**
   * Recreates one chunk of a queue's jobs, fenced by the queue's ownership
   * lease held with `lock.token`; `opts.epoch` non-empty on the last call sets
   * the epoch marker; new stream entries sort after `opts.minStreamId`. Jobs
   * that exist are skipped.
   */
  abstract restoreJobs(queue: string, lock: { token: string; ttlMs: number }, opts: { epoch: string; minStreamId: string }, jobs: RestoreJobInput[]): Promise<RestoreJobsResult>;
}
