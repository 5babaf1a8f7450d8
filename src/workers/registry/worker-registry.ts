import { hostname } from 'node:os';
import type { WorkerEntry, WorkerRegistryStore } from '../../core/ports/workers';

/** What GET /workers reports for one worker process: its registry entry, or `dead` once its heartbeats stopped. */
export interface WorkerInfo extends Omit<WorkerEntry, 'status' | 'ttlMs'> {
  status: WorkerEntry['status'] | 'dead';
}

/** A dead worker's details stay readable this long after its last heartbeat (the sweep usually drops it first), ms. */
const KEEP_DEAD_MS = 2 * 3_600_000;

/**
 * Worker registry in Redis ({@link WorkerRegistryStore}): an entry per worker and the ids by last
 * heartbeat (ms). A worker that missed its heartbeats for `ttlMs` (three
 * intervals) is reported `dead`, with the details it last wrote (hostname,
 * pid, queues...), until the sweep drops it.
 */
export class WorkerRegistry {
  private status: 'running' | 'draining' = 'running';
  private readonly startedAt = Date.now();

  constructor(
    private readonly store: WorkerRegistryStore,
    private readonly info: { id: string; queues: string[]; concurrency: number },
    private readonly ttlMs: number,
  ) {}

  async beat(active: number): Promise<void> {
    const now = Date.now();
    await this.store.beat(
      {
        id: this.info.id,
        hostname: hostname(),
        pid: process.pid,
        queues: this.info.queues,
        concurrency: this.info.concurrency,
        active,
        startedAt: this.startedAt,
        lastHeartbeatAt: now,
        status: this.status,
        ttlMs: this.ttlMs,
      },
      // Outlives the worker, so a dead one is still shown with its details.
      this.ttlMs + KEEP_DEAD_MS,
    );
  }

  async draining(active: number): Promise<void> {
    this.status = 'draining';
    await this.beat(active);
  }

  async remove(): Promise<void> {
    await this.store.remove(this.info.id);
  }

  /** Every registered worker, dead ones included (entry expired). */
  static async list(store: WorkerRegistryStore): Promise<WorkerInfo[]> {
    const now = Date.now();
    return (await store.list()).map(({ id, lastBeatAt, entry: h }) => {
      if (!h) return { id, hostname: '', pid: 0, queues: [], concurrency: 0, active: 0, startedAt: lastBeatAt, lastHeartbeatAt: lastBeatAt, status: 'dead' };
      // Entries written before `ttl` was recorded expired with their worker: a present one is alive.
      const missed = h.ttlMs !== null && now - h.lastHeartbeatAt > h.ttlMs;
      return {
        id: h.id,
        hostname: h.hostname,
        pid: h.pid,
        queues: h.queues,
        concurrency: h.concurrency,
        active: h.active,
        startedAt: h.startedAt,
        lastHeartbeatAt: h.lastHeartbeatAt,
        status: missed ? 'dead' : h.status,
      };
    });
  }

  /** Drops dead workers last seen more than `olderThanMs` ago. Returns how many. */
  static sweep(store: WorkerRegistryStore, olderThanMs: number): Promise<number> {
    return store.sweep(Date.now() - olderThanMs);
  }
}
