import { randomBytes } from 'node:crypto';
import Redis from 'ioredis';
import { entryFields } from '../../src/mirror/projection';
import { createRedis, RedisClient } from '../../src/redis/connection';
import type { QueueKeys } from '../../src/redis/keys';
import { RedisScripts } from '../../src/redis/scripts';
import { createRedisStores, type RedisStores } from '../../src/redis/stores';
import type { RedisJobStore } from '../../src/redis/stores/job-store';
import { TEST_RUN } from './run';

export const REDIS_URL = process.env.REDIS_URL || 'redis://127.0.0.1:6379';

/**
 * A unique key prefix per test file, so tests never see each other's keys:
 * `t-<name>-<run>-<hex>` (run: test/support/run.ts). Every key a test makes
 * must start with `<prefix>:` (deleteByPrefix scans that); the global
 * teardown fails the run on any key of the run left under `t-*`.
 */
export function testPrefix(name: string): string {
  return `t-${name}-${TEST_RUN}-${randomBytes(2).toString('hex')}`;
}

export interface TestStore {
  redis: RedisClient;
  /** Every store on `redis` under `prefix` (src/redis/stores). */
  stores: RedisStores;
  /** The job store (`stores.jobs`). */
  store: RedisJobStore;
  scripts: RedisScripts;
  /** A queue's key names, for tests that look at Redis directly. */
  keys(queue: string): QueueKeys;
  prefix: string;
  close(): Promise<void>;
}

/** A store on real Redis under a fresh prefix; close() deletes its keys. */
export async function openStore(name: string, url = REDIS_URL): Promise<TestStore> {
  const prefix = testPrefix(name);
  const redis = createRedis({ redisUrl: url, redisClusterNodes: null });
  const scripts = new RedisScripts(redis);
  await scripts.verify();
  const stores = createRedisStores(redis, prefix, undefined, scripts);
  return {
    redis,
    stores,
    store: stores.jobs,
    scripts,
    keys: (queue) => stores.ctx.keys(queue),
    prefix,
    close: async () => {
      await deleteByPrefix(redis as Redis, prefix);
      redis.disconnect();
    },
  };
}

export async function deleteByPrefix(redis: Redis, prefix: string): Promise<void> {
  let cursor = '0';
  do {
    const [next, keys] = await redis.scan(cursor, 'MATCH', `${prefix}:*`, 'COUNT', 1000);
    cursor = next;
    if (keys.length) await redis.unlink(...keys);
  } while (cursor !== '0');
}

/** Reads every entry of a queue's events stream as objects. */
export async function readEvents(redis: RedisClient, eventsKey: string): Promise<Record<string, string>[]> {
  const entries = await redis.xrange(eventsKey, '-', '+');
  return entries.map(([id, fields]) => {
    return { streamId: id, ...entryFields(fields) };
  });
}

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
