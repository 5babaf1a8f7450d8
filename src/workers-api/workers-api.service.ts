import { Inject, Injectable } from '@nestjs/common';
import type { SluiceConfig } from '../config/config';
import { SLUICE_CONFIG } from '../config/config.module';
import { iso, WithIsoTimes } from '../http/api-job';
import type { RedisClient } from '../redis/connection';
import { REDIS } from '../redis/redis.module';
import { WorkerInfo, WorkerRegistry } from '../workers/worker-registry';
import { bareQueue, DEFAULT_PROJECT, inProject } from '../core/project-queue';

/** The API.md worker object: the registry's WorkerInfo with its times as ISO strings. */
export type ApiWorker = WithIsoTimes<WorkerInfo, 'startedAt' | 'lastHeartbeatAt'>;

/**
 * Reads the worker registry that worker processes keep in Redis
 * (src/workers/worker-registry.ts): one hash per worker, expiring after three
 * heartbeat intervals; a worker whose hash expired is `dead` until the
 * scheduler's sweep drops it.
 */
@Injectable()
export class WorkersApiService {
  constructor(
    @Inject(REDIS) private readonly redis: RedisClient,
    @Inject(SLUICE_CONFIG) private readonly config: SluiceConfig,
  ) {}

  /**
   * The workers that serve `project`, oldest heartbeat first. Workers are
   * server processes shared by every project (their handlers are server
   * code): one with `QUEUES=*` serves every project's queues and is shown to
   * each as `["*"]`; one with a QUEUES list is shown to a project with that
   * list cut to the project's queues (bare names), and not at all to a
   * project none of its queues belongs to. A dead entry whose details expired
   * (no queues known) is shown to `default` only.
   */
  async list(project: string): Promise<ApiWorker[]> {
    const workers = await WorkerRegistry.list(this.redis, this.config.redisPrefix);
    const out: ApiWorker[] = [];
    for (const w of workers) {
      const queues = w.queues.includes('*') ? ['*'] : w.queues.filter((q) => inProject(q, project)).map(bareQueue);
      if (queues.length === 0 && (w.queues.length > 0 || project !== DEFAULT_PROJECT)) continue;
      out.push({ ...w, queues, startedAt: iso(w.startedAt), lastHeartbeatAt: iso(w.lastHeartbeatAt) });
    }
    return out;
  }
}
