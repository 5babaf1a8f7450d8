import { Inject, Injectable } from '@nestjs/common';
import type { SluiceConfig } from '../config/config';
import { SLUICE_CONFIG } from '../config/config.module';
import { iso, WithIsoTimes } from '../http/api-job';
import type { RedisClient } from '../redis/connection';
import { REDIS } from '../redis/redis.module';
import { WorkerInfo, WorkerRegistry } from '../workers/worker-registry';

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

  /** Every registered worker, oldest heartbeat first. */
  async list(): Promise<ApiWorker[]> {
    const workers = await WorkerRegistry.list(this.redis, this.config.redisPrefix);
    return workers.map((w) => ({ ...w, startedAt: iso(w.startedAt), lastHeartbeatAt: iso(w.lastHeartbeatAt) }));
  }
}
