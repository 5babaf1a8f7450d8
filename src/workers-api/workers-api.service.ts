import { Inject, Injectable } from '@nestjs/common';
import { DEFAULT_PROJECT } from '../auth/principal';
import type { SluiceConfig } from '../config/config';
import { SLUICE_CONFIG } from '../config/config.module';
import { ExternalWorkerTracker } from '../external/external-workers';
import { iso, WithIsoTimes } from '../http/api-job';
import type { RedisClient } from '../redis/connection';
import { RedisJobStore } from '../redis/redis-job-store';
import { REDIS } from '../redis/redis.module';
import { WorkerInfo, WorkerRegistry } from '../workers/worker-registry';
import { heldJobs } from './held-jobs';

/**
 * The API.md worker object: the registry's WorkerInfo with its times as ISO
 * strings, plus (v1.1 console, additive) `kind`, `jobs` (ids of the active
 * jobs it holds, at most 100) and `lastClaimAt` (external workers).
 */
export type ApiWorker = WithIsoTimes<WorkerInfo, 'startedAt' | 'lastHeartbeatAt'> & {
  kind: 'process' | 'external';
  jobs?: string[];
  lastClaimAt: string | null;
};

/**
 * Reads the workers: the in-process ones from the registry that worker
 * processes keep in Redis (src/workers/worker-registry.ts: one hash per
 * worker, `dead` after three missed heartbeats until the scheduler's sweep
 * drops it), and the external ones the API saw calling the external worker
 * protocol (src/external/external-workers.ts: `running` while seen within
 * max(2 × LOCK_TTL_MS, 60 s), then `dead`, listed for an hour).
 */
@Injectable()
export class WorkersApiService {
  constructor(
    @Inject(REDIS) private readonly redis: RedisClient,
    @Inject(SLUICE_CONFIG) private readonly config: SluiceConfig,
    private readonly store: RedisJobStore,
  ) {}

  /**
   * Every known worker: in-process ones (oldest heartbeat first), then external ones (most recently seen first).
   * @param project the caller's project (one project today: its queues' filter goes here when projects land).
   * @param opts.held also read the jobs each one holds (GET /workers; the dashboard's counts skip it).
   * @throws when Redis is unreachable.
   */
  async list(project = DEFAULT_PROJECT, opts: { held?: boolean } = {}): Promise<ApiWorker[]> {
    void project;
    const now = Date.now();
    const [workers, external] = await Promise.all([
      WorkerRegistry.list(this.redis, this.config.redisPrefix),
      ExternalWorkerTracker.list(this.redis, this.config.redisPrefix, now),
    ]);
    const held = opts.held ? await heldJobs(this.store, await this.store.listQueues()) : null;
    const aliveMs = Math.max(2 * this.config.lockTtlMs, 60_000);
    const known = new Set(workers.map((w) => w.id));
    const out: ApiWorker[] = workers.map((w) => ({
      ...w,
      startedAt: iso(w.startedAt),
      lastHeartbeatAt: iso(w.lastHeartbeatAt),
      kind: 'process',
      lastClaimAt: null,
      ...(held ? { jobs: held.get(w.id)?.ids ?? [] } : {}),
    }));
    for (const x of external) {
      if (known.has(x.id)) continue;
      const h = held?.get(x.id);
      out.push({
        id: x.id, hostname: '', pid: 0, queues: x.queues, concurrency: 0, active: h?.count ?? 0,
        startedAt: iso(x.firstSeenAt), lastHeartbeatAt: iso(x.lastSeenAt), status: now - x.lastSeenAt > aliveMs ? 'dead' : 'running',
        kind: 'external', lastClaimAt: iso(x.lastClaimAt), ...(held ? { jobs: h?.ids ?? [] } : {}),
      });
    }
    return out;
  }
}
