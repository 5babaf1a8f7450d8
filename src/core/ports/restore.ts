/** One job for {@link RestoreStore.restoreJobs}; times are epoch ms. */
export interface RestoreJobInput {
  id: string;
  /** Its state in PostgreSQL; `cancel` = active with a pending cancel request; `blocked` = a flow job waiting for its dependencies. */
  kind: 'waiting' | 'delayed' | 'active' | 'cancel' | 'failed' | 'blocked';
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
  /** The job's concurrency key (flow control per key), null when it has none. */
  concurrencyKey?: string | null;
  /** Its place in a flow (hash fields fl, fp, rf, dp), null or absent outside flows. */
  flow?: RestoreJobFlow | null;
}

/** A flow job's fields as the restore writes them back (lua/enqueueJobs-5.lua field 14). */
export interface RestoreJobFlow {
  flowId: string;
  policy: 'cancel' | 'run';
  /** Its ref in the flow ('' when the history has none). */
  ref: string;
  /** Its dependencies: ref, job id, queue (project-qualified), at most 1,000. */
  dependsOn: { ref: string; id: string; queue: string }[];
}

/** Outcome of one restoreJobs call: counts of jobs recreated per kind, and skipped (already there). */
export type RestoreJobsResult =
  | { status: 'ok'; waiting: number; delayed: number; active: number; failed: number; cancelled: number; skipped: number; blocked: number }
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

  // ---- the restore watch (src/restore/loss-watch.ts): Redis lost or rewound at run time ----

  /** The queue's marker, mirror group position and check stamp, read in one step. */
  abstract inspect(queue: string): Promise<QueueInspection>;
  /**
   * Marks the queue checked on the current server (lifts the restore fence:
   * claims, promotions and reaping go on) and raises the mirror group's
   * position to `minDelivered` (the newest stream id PostgreSQL holds) when
   * it is behind. @returns 'changed' (nothing written) when the marker is no
   * longer `epoch`, or the server is no longer `runId` (when given).
   */
  abstract verify(queue: string, epoch: string, minDelivered: string | null, runId?: string): Promise<'ok' | 'changed'>;
  /**
   * Drops the marker if it is still `staleEpoch`, fences the queue until it is
   * verified again ("resetting") and hands the queue's mirror lock to `lock`.
   * @returns false when another process did it first.
   */
  abstract reset(queue: string, staleEpoch: string, lock: { token: string; ttlMs: number }): Promise<boolean>;
  /** Whether the queue was reset and not verified since (its jobs must be pruned before a restore). */
  abstract resetting(queue: string): Promise<boolean>;
  /** Ids of every job in the queue's waiting, delayed, active, failed and blocked sets. */
  abstract jobIds(queue: string): Promise<string[]>;
  /**
   * Removes these jobs (sets and hashes), fenced by the queue's mirror lock
   * held with `lock.token` (renewed) and the marker's absence.
   * @returns how many hashes went, or -1 (nothing done) when the lock is not held or the marker exists.
   */
  abstract prune(queue: string, lock: { token: string; ttlMs: number }, ids: string[]): Promise<number>;
  /**
   * Says (for `ttlMs`, renewable) or unsays that process `who` rebuilds:
   * every process's `/readyz` answers `restoring` while any says so.
   */
  abstract setRestoring(who: string, on: boolean, ttlMs?: number): Promise<void>;
  /** Whether some process says it rebuilds. */
  abstract isRestoring(): Promise<boolean>;
  /**
   * In one round trip: whether some process says it rebuilds, and whether
   * Redis holds the installation marker ({@link markInstalled}): a marker
   * gone means Redis lost what it held since it was set.
   */
  abstract state(): Promise<{ restoring: boolean; installed: boolean }>;
  /**
   * Sets the installation marker, once the registries PostgreSQL keeps (API
   * keys, projects, queue settings) are in Redis (src/restore/loss-watch.ts).
   */
  abstract markInstalled(): Promise<void>;
}

/** What the restore watch reads of one queue in one step ({@link RestoreStore.inspect}). */
export interface QueueInspection {
  /** The epoch marker, or null when the store lost (or never had) the queue. */
  epoch: string | null;
  /** Last stream id the mirror's consumer group was handed ("ms-seq"), or null when the stream or group is missing. */
  lastDelivered: string | null;
  /** Run id of the store server the queue was last checked on, or null when never checked. */
  checkedOn: string | null;
  /** Run id of the store server holding the queue now (changes on every restart and failover). */
  runId: string;
}
