import { Global, Inject, Module, OnApplicationShutdown, OnModuleInit } from '@nestjs/common';
import type { SluiceConfig } from '../config/config';
import { LOGGER, SLUICE_CONFIG } from '../config/config.module';
import type { Logger } from '../logging/logger';
import { createRedis, RedisClient } from './connection';
import { RedisJobStore, storeDefaultsOf } from './redis-job-store';
import { RedisScripts } from './scripts';

export const REDIS = Symbol('REDIS');

/**
 * One shared Redis connection (auto-pipelined), the scripts registered on it
 * and the job store. Scripts are compiled at boot: a broken script stops the
 * process naming the file.
 */
@Global()
@Module({
  providers: [
    {
      provide: REDIS,
      inject: [SLUICE_CONFIG],
      useFactory: (c: SluiceConfig) => createRedis(c, { name: 'sluice' }),
    },
    { provide: RedisScripts, inject: [REDIS], useFactory: (r: RedisClient) => new RedisScripts(r) },
    {
      provide: RedisJobStore,
      inject: [REDIS, RedisScripts, SLUICE_CONFIG],
      useFactory: (r: RedisClient, s: RedisScripts, c: SluiceConfig) =>
        new RedisJobStore(r, s, c.redisPrefix, storeDefaultsOf(c)),
    },
  ],
  exports: [REDIS, RedisScripts, RedisJobStore],
})
export class RedisModule implements OnModuleInit, OnApplicationShutdown {
  constructor(
    @Inject(REDIS) private readonly redis: RedisClient,
    private readonly scripts: RedisScripts,
    @Inject(LOGGER) private readonly log: Logger,
    @Inject(SLUICE_CONFIG) private readonly config: SluiceConfig,
  ) {}

  async onModuleInit(): Promise<void> {
    try {
      await this.redis.ping();
    } catch (e) {
      const where = this.config.redisClusterNodes ? `REDIS_CLUSTER_NODES=${this.config.redisClusterNodes.map((n) => `${n.host}:${n.port}`).join(',')}` : `REDIS_URL=${this.config.redisUrl}`;
      throw new Error(`cannot reach Redis (${where}): ${(e as Error).message}`);
    }
    await this.scripts.verify();
    this.log.debug({}, 'lua scripts compiled');
  }

  async onApplicationShutdown(): Promise<void> {
    await this.redis.quit().catch(() => this.redis.disconnect());
  }
}
