import type { RedisClient } from '../connection';
import { RedisContext } from '../context';
import { RedisScripts } from '../scripts';
import { RedisConnectionState } from './connection-state';
import { RedisDeadLetterStore } from './dead-letter-store';
import type { StoreDefaults } from './enqueue';
import { RedisJobStore } from './job-store';
import { RedisMirrorStream, RedisQueueOwnership } from './mirror-stream';
import { RedisQueueStore } from './queue-store';
import { RedisRestoreStore } from './restore-store';

export { storeDefaultsOf, type StoreDefaults } from './enqueue';

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
}

/**
 * Builds every store on one connection (its scripts registered once). For
 * code outside Nest: scripts, the mirror's writer thread, benchmarks, tests.
 * @param scripts already registered on `redis` (default: registered now).
 */
export function createRedisStores(redis: RedisClient, prefix: string, defaults?: StoreDefaults, scripts = new RedisScripts(redis)): RedisStores {
  const ctx = new RedisContext(redis, scripts, prefix);
  const queues = new RedisQueueStore(ctx);
  return {
    ctx,
    jobs: new RedisJobStore(ctx, queues, defaults),
    queues,
    deadLetters: new RedisDeadLetterStore(ctx),
    connection: new RedisConnectionState(redis),
    mirror: new RedisMirrorStream(ctx),
    ownership: new RedisQueueOwnership(ctx),
    restore: new RedisRestoreStore(ctx),
  };
}
