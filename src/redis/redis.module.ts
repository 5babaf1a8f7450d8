import { Global, Inject, Module, OnApplicationShutdown, OnModuleInit } from '@nestjs/common';
import type Redis from 'ioredis';
import type { SluiceConfig } from '../config/config';
import { LOGGER, SLUICE_CONFIG } from '../config/config.module';
import {
  ApiKeyStore,
  DeadLetterStore,
  ExternalWorkerSeen,
  FlowRecordStore,
  FlowRestoreStore,
  JobStore,
  LiveEvents,
  LoginAttempts,
  MirrorStream,
  OplogBuffer,
  ProjectRegistry,
  QueueOwnership,
  QueueStore,
  RestoreStore,
  ScheduleSignals,
  SessionRecords,
  StoreConnection,
  TokenBuckets,
  WakeSignals,
  WorkerRegistryStore,
} from '../core/ports';
import type { Logger } from '../logging/logger';
import { createRedis, describeRedis, RedisClient } from './connection';
import { createRedisStores, RedisStores, storeDefaultsOf } from './stores';
import { RedisWakeSignals } from './wake/wake-signals';
import { isCluster } from './wake/wake-waiter';

/** Token of the shared connection: only src/redis injects it. */
export const REDIS = Symbol('REDIS');
/** Token of every store (RedisStores): for the composition root and tests; features inject the ports. */
export const REDIS_STORES = Symbol('REDIS_STORES');

/**
 * One shared Redis connection (auto-pipelined), the scripts registered on it
 * and every store, provided under its port (src/core/ports). Scripts are
 * compiled at boot: a broken script stops the process naming the file.
 */
@Global()
@Module({
  providers: [
    {
      provide: REDIS,
      inject: [SLUICE_CONFIG],
      useFactory: (c: SluiceConfig) => createRedis(c, { name: 'sluice' }),
    },
    {
      provide: REDIS_STORES,
      inject: [REDIS, SLUICE_CONFIG],
      useFactory: (r: RedisClient, c: SluiceConfig) =>
        // A subscriber (schedule notices) gets a connection of its own, without auto-pipelining.
        createRedisStores(r, c.redisPrefix, storeDefaultsOf(c), undefined, (name) => createRedis(c, { blocking: true, name })),
    },
    { provide: JobStore, inject: [REDIS_STORES], useFactory: (s: RedisStores) => s.jobs },
    { provide: QueueStore, inject: [REDIS_STORES], useFactory: (s: RedisStores) => s.queues },
    { provide: FlowRecordStore, inject: [REDIS_STORES], useFactory: (s: RedisStores) => s.flows },
    { provide: FlowRestoreStore, inject: [REDIS_STORES], useFactory: (s: RedisStores) => s.flowRestore },
    { provide: DeadLetterStore, inject: [REDIS_STORES], useFactory: (s: RedisStores) => s.deadLetters },
    { provide: StoreConnection, inject: [REDIS_STORES], useFactory: (s: RedisStores) => s.connection },
    { provide: MirrorStream, inject: [REDIS_STORES], useFactory: (s: RedisStores) => s.mirror },
    { provide: QueueOwnership, inject: [REDIS_STORES], useFactory: (s: RedisStores) => s.ownership },
    { provide: RestoreStore, inject: [REDIS_STORES], useFactory: (s: RedisStores) => s.restore },
    {
      provide: WakeSignals,
      inject: [REDIS_STORES, SLUICE_CONFIG],
      useFactory: (s: RedisStores, c: SluiceConfig) => new RedisWakeSignals(s.ctx, (name) => createRedis(c, { blocking: true, name }), isCluster(s.ctx.redis)),
    },
    { provide: ApiKeyStore, inject: [REDIS_STORES], useFactory: (s: RedisStores) => s.apiKeys },
    { provide: SessionRecords, inject: [REDIS_STORES], useFactory: (s: RedisStores) => s.sessions },
    { provide: LoginAttempts, inject: [REDIS_STORES], useFactory: (s: RedisStores) => s.loginAttempts },
    { provide: TokenBuckets, inject: [REDIS_STORES], useFactory: (s: RedisStores) => s.tokenBuckets },
    { provide: ProjectRegistry, inject: [REDIS_STORES], useFactory: (s: RedisStores) => s.projects },
    { provide: OplogBuffer, inject: [REDIS_STORES], useFactory: (s: RedisStores) => s.oplog },
    { provide: ScheduleSignals, inject: [REDIS_STORES], useFactory: (s: RedisStores) => s.scheduleSignals },
    { provide: LiveEvents, inject: [REDIS_STORES], useFactory: (s: RedisStores) => s.liveEvents },
    { provide: WorkerRegistryStore, inject: [REDIS_STORES], useFactory: (s: RedisStores) => s.workerRegistry },
    { provide: ExternalWorkerSeen, inject: [REDIS_STORES], useFactory: (s: RedisStores) => s.externalWorkers },
  ],
  exports: [
    REDIS,
    REDIS_STORES,
    JobStore,
    QueueStore,
    FlowRecordStore,
    FlowRestoreStore,
    DeadLetterStore,
    StoreConnection,
    ApiKeyStore,
    SessionRecords,
    LoginAttempts,
    TokenBuckets,
    ProjectRegistry,
    OplogBuffer,
    ScheduleSignals,
    LiveEvents,
    WorkerRegistryStore,
    ExternalWorkerSeen,
    MirrorStream,
    QueueOwnership,
    RestoreStore,
    WakeSignals,
  ],
})
export class RedisModule implements OnModuleInit, OnApplicationShutdown {
  constructor(
    @Inject(REDIS) private readonly redis: RedisClient,
    @Inject(REDIS_STORES) private readonly stores: RedisStores,
    @Inject(LOGGER) private readonly log: Logger,
    @Inject(SLUICE_CONFIG) private readonly config: SluiceConfig,
  ) {}

  async onModuleInit(): Promise<void> {
    try {
      await this.redis.ping();
    } catch (e) {
      throw new Error(`cannot reach Redis (${describeRedis(this.config)}): ${(e as Error).message}`);
    }
    // A replica would answer every write READONLY, and reconnectOnReadonly would
    // reconnect to it for ever: say so at start instead. (Sentinel mode checks
    // the role itself; a cluster answers MOVED.)
    if (!this.config.redisClusterNodes && !this.config.redisSentinel) {
      // A server that does not know ROLE (a proxy) is taken as it is.
      const role = ((await (this.redis as Redis).role().catch(() => null)) as unknown[] | null)?.[0];
      if (role === 'slave') throw new Error(`Redis at ${describeRedis(this.config)} is a replica: point REDIS_URL at the master, or use REDIS_SENTINELS`);
    }
    await this.stores.ctx.scripts.verify();
    this.log.debug({}, 'lua scripts compiled');
  }

  async onApplicationShutdown(): Promise<void> {
    await this.redis.quit().catch(() => this.redis.disconnect());
  }
}
