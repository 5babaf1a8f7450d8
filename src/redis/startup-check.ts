import type { Logger } from '../logging/logger';
import { parseRedisUrl } from '../config/config';
import { createRedis, describeRedis, RedisClient, RedisConnectionConfig } from './connection';
import { diagnoseRedis } from './startup-diagnosis';

/**
 * How long the start waits for Redis to answer before it looks for why, ms.
 * With the probes (≤ 3 × START_PROBE_TIMEOUT_MS) a configuration that cannot
 * work stops the process within 30 s (API.md v1.3), and a Redis started at the
 * same time as Sluice (a compose file, a pod) has this long to come up.
 */
export const START_WAIT_MS = 12_000;
/** Each probe's connection and reply timeout, ms. */
export const START_PROBE_TIMEOUT_MS = 2_500;
/** Pause between two PINGs that failed fast (connection refused), ms. */
const RETRY_PAUSE_MS = 250;

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms).unref());

/** `p`'s value, or `undefined` when it has not settled within `ms`; its rejection is rethrown. */
async function within<T>(p: Promise<T>, ms: number): Promise<T | undefined> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  p.catch(() => undefined); // settled after the timeout: nobody awaits it any more
  try {
    return await Promise.race([p, new Promise<undefined>((r) => (timer = setTimeout(() => r(undefined), ms)))]);
  } finally {
    clearTimeout(timer);
  }
}

/** Whether the client gets a PONG within `ms` (PINGs again after one that failed at once). */
async function answersWithin(client: RedisClient, ms: number): Promise<boolean> {
  const deadline = Date.now() + ms;
  while (Date.now() < deadline) {
    try {
      if ((await within(client.ping(), deadline - Date.now())) !== undefined) return true;
    } catch (e) {
      // The server's own refusal (a wrong password) will not change by waiting.
      if ((e as Error).name === 'ReplyError' && !/^(LOADING|MASTERDOWN)\b/.test((e as Error).message)) return false;
      await sleep(Math.min(RETRY_PAUSE_MS, Math.max(0, deadline - Date.now())));
    }
  }
  return false;
}

/**
 * Refuses a database number the server lacks: ioredis would report the
 * refused SELECT as an error event only, and go on in database 0 — another
 * installation's keys. Reads `CONFIG GET databases` for the message when the
 * server allows it, and SELECTs the database in any case (the ground truth,
 * also where CONFIG is renamed or denied).
 * @throws Error naming REDIS_URL.
 */
async function checkDatabase(client: RedisClient, db: number, where: string, timeoutMs: number): Promise<void> {
  if (db === 0) return;
  const conf = await within(client.config('GET', 'databases') as Promise<unknown>, timeoutMs).catch(() => undefined);
  const count = Array.isArray(conf) ? Number(conf[1]) : NaN;
  if (Number.isInteger(count) && db >= count) {
    throw new Error(`REDIS_URL: database ${db} does not exist on ${where}: it has ${count} (0..${count - 1})`);
  }
  try {
    if ((await within(client.select(db), timeoutMs)) === undefined) throw new Error('no answer');
  } catch (e) {
    throw new Error(`REDIS_URL: database ${db} cannot be selected on ${where}: ${(e as Error).message}`);
  }
}

/**
 * Checks at start that the Redis configuration works, before anything else
 * uses it: the node (REDIS_URL), the master the Sentinels name
 * (REDIS_SENTINELS, REDIS_SENTINEL_NAME) or the cluster answers a PING
 * within START_WAIT_MS through a connection made as the process's own
 * (createRedis), and the database REDIS_URL names exists. Otherwise probes
 * find why (src/redis/startup-diagnosis.ts) and this throws, naming the
 * variable to fix. A Redis still loading its dataset is waited for (a
 * warning each START_WAIT_MS). The connection is closed in every case.
 * @throws Error whose message names the variable, never a password.
 */
export async function checkRedisAtStart(
  config: RedisConnectionConfig,
  log: Logger,
  opts: { waitMs?: number; probeTimeoutMs?: number } = {},
): Promise<void> {
  const waitMs = opts.waitMs ?? START_WAIT_MS;
  const probeTimeoutMs = opts.probeTimeoutMs ?? START_PROBE_TIMEOUT_MS;
  const client = createRedis(config, { name: 'sluice-start' });
  let lastError: string | null = null;
  // createRedis swallows error events; this one keeps the last for the message.
  client.on('error', (e: Error) => (lastError = e.message));
  try {
    while (!(await answersWithin(client, waitMs))) {
      const d = await diagnoseRedis(config, lastError, probeTimeoutMs);
      if (!d.retry) throw new Error(d.message);
      log.warn({ redis: describeRedis(config) }, `waiting for Redis: ${d.message}`);
    }
    if (!config.redisClusterNodes) {
      const db = config.redisSentinel ? config.redisSentinel.node.db : parseRedisUrl(config.redisUrl).db;
      await checkDatabase(client, db, describeRedis(config), probeTimeoutMs);
    }
  } finally {
    client.disconnect();
  }
}
