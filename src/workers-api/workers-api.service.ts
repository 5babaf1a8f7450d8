import { Inject, Injectable } from '@nestjs/common';
import type { SluiceConfig } from '../config/config';
import { SLUICE_CONFIG } from '../config/config.module';
import { iso } from '../http/api-job';
import type { RedisClient } from '../redis/connection';
import { REDIS } from '../redis/redis.module';
import { WorkerRegistry } from '../workers/worker-registry';

/** The API.md worker object (times ISO). */
export interface ApiWorker {
  id: string;
  hostname: string;
  pid: number;
  queues: string[];
  concurrency: number;
  active: number;
  startedAt: string | null;
  lastHeartbeatAt: string | null;
  status: 'running' | 'draining' | 'dead';
}

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
    return workers.map((w) => ({
      id: w.id,
      hostname: w.hostname,
      pid: w.pid,
      queues: w.queues,
      concurrency: w.concurrency,
      active: w.active,
      startedAt: iso(w.startedAt),
      lastHeartbeatAt: iso(w.lastHeartbeatAt),
      status: w.status,
    }));
  }
}
