import { Cluster, type Redis } from 'ioredis';
import type { RedisClient } from '../connection';
import { RedisContext } from '../context';
import { RedisScripts } from '../scripts';
import { RedisApiKeyStore } from './api-key-store';
import { RedisConnectionState } from './connection-state';
import { RedisDeadLetterStore } from './dead-letter-store';
import type { StoreDefaults } from './enqueue';
import { RedisExternalWorkerSeen } from './external-workers-seen';
import { RedisJobStore } from './job-store';
import { RedisMirrorStream, RedisQueueOwnership } from './mirror-stream';
import { RedisQueueStore } from './queue-store';
import { RedisRestoreStore } from './restore-store';
import { RedisLiveEvents } from './live-events';
import { RedisLoginAttempts } from './login-attempts';
import { RedisOplogBuffer } from './oplog-buffer';
import { RedisProjectRegistry } from './project-registry';
import { RedisScheduleSignals, type SubscriberFactory } from './schedule-signals';
import { RedisSessionRecords } from './session-records';
import { RedisTokenBuckets } from './token-buckets';
import { RedisWorkerRegistryStore } from './worker-registry-store';
import { RedisFlowRecordStore } from './flow-record';
import { RedisFlowRestoreStore } from './flow-restore';

export { storeDefaultsOf, type StoreDefaults } from './enqueue';
export type { SubscriberFactory } from './schedule-signals';
export {
  RedisApiKeyStore,
  RedisExternalWorkerSeen,
  RedisLiveEvents,
  RedisLoginAttempts,
  RedisOplogBuffer,
  RedisProjectRegistry,
  RedisScheduleSignals,
  RedisSessionRecords,
  RedisTokenBuckets,
  RedisWorkerRegistryStore,
};

/** Every Redis store, built on one connection (see {@link createRedisStores}). */
export interface RedisStores {
  /** Internal to src/redis and its tests: the connection, scripts, prefix and key names. */
  ctx: RedisContext;
  jobs: RedisJobStore;
  queues: RedisQueueStore;
  deadLetters: RedisDeadLetterStore;
  connection: RedisConnectionState;
  mirror: RedisMirrorStream;
  ownership: RedisQueueOwnership;
  restore: RedisRestoreStore;
  apiKeys: RedisApiKeyStore;
  sessions: RedisSessionRecords;
  loginAttempts: RedisLoginAttempts;
  tokenBuckets: RedisTokenBuckets;
  projects: RedisProjectRegistry;
  oplog: RedisOplogBuffer;
  scheduleSignals: RedisScheduleSignals;
  liveEvents: RedisLiveEvents;
  workerRegistry: RedisWorkerRegistryStore;
  externalWorkers: RedisExternalWorkerSeen;
  flows: RedisFlowRecordStore;
  flowRestore: RedisFlowRestoreStore;
}

/**
 * Builds every store on one connection (its scripts registered once). For
 * code outside Nest: scripts, the mirror's writer thread, benchmarks, tests.
 * @param scripts already registered on `redis` (default: registered now).
 * @param connect opens a connection of its own (a pub/sub subscriber, the mirror's blocking XREAD) under
 *   the name given (default: a duplicate of `redis` so named, without auto-pipelining; on a Cluster a plain duplicate).
 */
export function createRedisStores(
  redis: RedisClient,
  prefix: string,
  defaults?: StoreDefaults,
  scripts = new RedisScripts(redis),
  connect: SubscriberFactory = (name) =>
    (redis instanceof Cluster
      ? redis.duplicate()
      : (redis as Redis).duplicate({
          connectionName: name,
          enableAutoPipelining: false,
        })) as RedisClient,
): RedisStores {
  const ctx = new RedisContext(redis, scripts, prefix);
  const queues = new RedisQueueStore(ctx);
  return {
    ctx,
    jobs: new RedisJobStore(ctx, queues, defaults),
    queues,
    deadLetters: new RedisDeadLetterStore(ctx),
    connection: new RedisConnectionState(redis),
    mirror: new RedisMirrorStream(ctx, connect),
    ownership: new RedisQueueOwnership(ctx),
    restore: new RedisRestoreStore(ctx),
    apiKeys: new RedisApiKeyStore(redis, prefix),
    sessions: new RedisSessionRecords(redis, prefix),
    loginAttempts: new RedisLoginAttempts(redis, prefix),
    tokenBuckets: new RedisTokenBuckets(ctx),
    projects: new RedisProjectRegistry(redis, prefix),
    oplog: new RedisOplogBuffer(ctx),
    scheduleSignals: new RedisScheduleSignals(redis, prefix, connect),
    liveEvents: new RedisLiveEvents(redis, prefix),
    workerRegistry: new RedisWorkerRegistryStore(redis, prefix),
    externalWorkers: new RedisExternalWorkerSeen(redis, prefix),
    flows: new RedisFlowRecordStore(ctx, connect),
    flowRestore: new RedisFlowRestoreStore(ctx),
  };
}
