import type { BackoffSpec } from '../backoff';

/** A queue's configuration as stored (API.md queue object minus counts). */
export interface QueueSettings {
  name: string;
  paused: boolean;
  /** Cap on active jobs across all workers; null = none. */
  maxConcurrency: number | null;
  /** Cap on job starts per window across all workers; null = none. */
  rateLimit: { max: number; durationMs: number } | null;
  /** Served only through the external worker protocol; accepts any job type. */
  external: boolean;
  /** Per-queue defaults for jobs that do not set them. */
  defaults: { maxAttempts?: number; backoff?: BackoffSpec; timeoutMs?: number };
}

/** What {@link QueueStore.configure} changes; absent fields stay, null removes a limit. */
export interface QueueConfigChange {
  paused?: boolean;
  maxConcurrency?: number | null;
  rateLimit?: { max: number; durationMs: number } | null;
  external?: boolean;
  defaults?: { maxAttempts?: number; backoff?: BackoffSpec; timeoutMs?: number };
}

/** Live counts of one queue (not the history's). */
export interface LiveCounts {
  waiting: number;
  delayed: number;
  active: number;
  failed: number;
}

/**
 * The queues' storage port: the registry of queue names, their settings and
 * live counts. Implemented by `src/redis/stores/queue-store.ts`.
 */
export abstract class QueueStore {
  /** Records a queue name in the registry (once per process); a new one is announced to mirror writers. */
  abstract register(queue: string): Promise<void>;
  /** Every queue name ever registered, sorted. */
  abstract list(): Promise<string[]>;
  /** Changes settings; wakes the queue's idle workers (a resume or a lifted limit). */
  abstract configure(queue: string, change: QueueConfigChange): Promise<void>;
  /** @returns null when the queue does not exist (not in the registry). */
  abstract settings(queue: string): Promise<QueueSettings | null>;
  abstract liveCounts(queue: string): Promise<LiveCounts>;
  /**
   * When the oldest waiting job of `queue` became ready (epoch ms), in
   * O(priorities) work whatever the backlog; null when none waits.
   */
  abstract oldestWaitingSince(queue: string): Promise<number | null>;
  /**
   * Up to `max` active jobs of a queue (soonest lease expiry first) with the
   * worker id holding each (empty when unknown).
   */
  abstract activeHolders(queue: string, max: number): Promise<{ id: string; workerId: string }[]>;
}
