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
  /** At most this many active jobs per concurrency key, across all workers; null = none. */
  keyConcurrency: number | null;
  /** At most `max` starts per key in any sliding window of `durationMs`; null = none. */
  keyRateLimit: RateLimit | null;
  /**
   * How claims pick among keys: `round_robin` rotates over the keys with ready
   * jobs, `fifo` takes the best job of any eligible key. The effective value:
   * as set, else `round_robin` once the queue has had a keyed job, else `fifo`.
   */
  fairness: Fairness;
  /** A waiting job's effective priority rises by 1 per this many ms (bounded at 100); null = no aging. */
  agingMs: number | null;
  /** Failure summaries may send this queue's payload values to the model (API.md v1.3; never secret-keyed ones). */
  summaryIncludesPayload: boolean;
}

/** A cap on starts per window. */
export interface RateLimit {
  max: number;
  durationMs: number;
}

export type Fairness = 'fifo' | 'round_robin';

/** Limits of one concurrency key that replace the queue's for it (API.md v1.2 overrides). */
export interface KeyLimits {
  /** Replaces the queue's keyConcurrency for this key; null = the queue's applies. */
  concurrency: number | null;
  /** Replaces the queue's keyRateLimit for this key; null = the queue's applies. */
  rateLimit: RateLimit | null;
}

/** One key of a queue as `GET /queues/:name/keys` shows it. */
export interface KeyStats {
  key: string;
  /** Ready jobs of the key (waiting; delayed ones are not counted). */
  waiting: number;
  /** Jobs of the key held by workers (the slots it uses). */
  active: number;
  /** The key's override, null when it has none. */
  overrides: KeyLimits | null;
}

/** What {@link QueueStore.configure} changes; absent fields stay, null removes a limit. */
export interface QueueConfigChange {
  paused?: boolean;
  maxConcurrency?: number | null;
  rateLimit?: { max: number; durationMs: number } | null;
  external?: boolean;
  /** Each: absent stays, null removes the queue's own default. */
  defaults?: { maxAttempts?: number | null; backoff?: BackoffSpec | null; timeoutMs?: number | null };
  keyConcurrency?: number | null;
  keyRateLimit?: RateLimit | null;
  /** null = back to the default (see {@link QueueSettings.fairness}). */
  fairness?: Fairness | null;
  agingMs?: number | null;
  summaryIncludesPayload?: boolean;
}

/**
 * What PostgreSQL keeps of a queue so Redis can be given it back (API.md v1.3
 * "Security and recovery rules made exact"): its settings as one change with
 * every field present (null = not set; applied with {@link QueueStore.configure}
 * it sets exactly these) and each key override.
 */
export interface QueueSnapshot {
  config: Required<Omit<QueueConfigChange, 'defaults' | 'fairness'>> & {
    defaults: { maxAttempts: number | null; backoff: BackoffSpec | null; timeoutMs: number | null };
    /** As set (null: the default, see {@link QueueSettings.fairness}). */
    fairness: Fairness | null;
  };
  overrides: { key: string; limits: KeyLimits }[];
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
  /** Flow jobs of `queue` waiting for their dependencies (status `blocked`): not started yet, not counted as waiting. */
  abstract blockedCount(queue: string): Promise<number>;
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
  /**
   * The busiest keys of a queue, by waiting + active, then keys that only
   * have an override (so an operator can see and remove it), at most `limit`
   * (1..1000). Reads a per-queue counts index: O(log n + limit) whatever the
   * number of keys (lua/topKeys-1.lua).
   */
  abstract keys(queue: string, limit: number): Promise<KeyStats[]>;
  /**
   * Finishes a move of the queue's waiting jobs into lanes that a script
   * started (a job of another priority in turns mode) or a configure call
   * left unfinished (meta kmig, lua/rebuildLanes-3.lua). @returns true when
   * there was one to finish.
   */
  abstract finishLaneMove(queue: string): Promise<boolean>;
  /** One key's counts (exact, O(log n): the counts index and the key's lane), zeros for a key with no jobs. */
  abstract keyCounts(queue: string, key: string): Promise<{ waiting: number; active: number }>;
  /** Sets (merges) one key's override; absent fields stay, null clears one. Returns the override now stored. */
  abstract setKeyOverride(queue: string, key: string, change: Partial<KeyLimits>): Promise<KeyLimits>;
  /** Removes one key's override. @returns false when it had none. */
  abstract deleteKeyOverride(queue: string, key: string): Promise<boolean>;
  /**
   * The queue's settings and overrides as PostgreSQL keeps them, and whether
   * Redis holds them as the truth (`kept`: configured or given back since
   * Redis last lost them; every {@link configure} marks it). null: no such queue.
   */
  abstract snapshot(queue: string): Promise<{ snapshot: QueueSnapshot; kept: boolean } | null>;
  /** Notes (or forgets, `unsaved` false) a queue whose settings changed while PostgreSQL could not take the copy. */
  abstract markUnsaved(queue: string, unsaved: boolean): Promise<void>;
  /** The queues noted by {@link markUnsaved}. */
  abstract unsaved(): Promise<string[]>;
}
