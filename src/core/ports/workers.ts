/** One in-process worker as registered by its heartbeats (src/workers/registry); times epoch ms. */
export interface WorkerEntry {
  id: string;
  hostname: string;
  pid: number;
  queues: string[];
  concurrency: number;
  active: number;
  startedAt: number;
  lastHeartbeatAt: number;
  status: 'running' | 'draining';
  /** How long without a heartbeat makes it dead, ms; null for an entry written before it was recorded. */
  ttlMs: number | null;
}

/** A registered worker id, when it last beat (ms), and its entry (null once the entry expired). */
export interface RegisteredWorker {
  id: string;
  lastBeatAt: number;
  entry: WorkerEntry | null;
}

/**
 * The registry of in-process workers shared by every process: one entry per
 * worker (expiring) and the ids by last heartbeat.
 * Implemented by `src/redis/stores/worker-registry-store.ts`.
 */
export abstract class WorkerRegistryStore {
  /**
   * Writes a heartbeat: the entry (expiring after `keepMs`, written atomically)
   * and the id's last beat (`entry.lastHeartbeatAt`), concurrently.
   */
  abstract beat(entry: WorkerEntry & { ttlMs: number }, keepMs: number): Promise<void>;
  /** Removes a worker (its entry and its id). */
  abstract remove(id: string): Promise<void>;
  /** Every registered id, oldest beat first, with its entry if it has not expired. */
  abstract list(): Promise<RegisteredWorker[]>;
  /**
   * Drops the workers whose last beat is at or before `cutoffMs` (entries, then ids).
   * @returns how many ids were dropped.
   */
  abstract sweep(cutoffMs: number): Promise<number>;
}
