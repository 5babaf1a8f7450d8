/**
 * The one validated runtime configuration (API.md "Runtime configuration").
 * `loadConfig` reads the environment once; a bad value throws a ConfigError
 * naming the variable, and main.ts stops the process with that message.
 */

export type Role = 'api' | 'worker' | 'scheduler' | 'audit';
export const ALL_ROLES: readonly Role[] = ['api', 'worker', 'scheduler', 'audit'];

export interface SluiceConfig {
  port: number;
  host: string;
  redisUrl: string;
  /** host:port list; when set, ioredis Cluster is used instead of redisUrl. */
  redisClusterNodes: { host: string; port: number }[] | null;
  redisPrefix: string;
  databaseUrl: string;
  roles: Set<Role>;
  /** Queues served by this worker, in priority order; ['*'] = all known queues. */
  queues: string[];
  workerConcurrency: number;
  lockTtlMs: number;
  heartbeatIntervalMs: number;
  reaperIntervalMs: number;
  shutdownGraceMs: number;
  maxRetries: number;
  maxPayloadBytes: number;
  idempotencyTtlMs: number;
  diagnosticHandlers: boolean;
  logLevel: string;
  /** Pending audit events (all streams) above which enqueue answers 503. */
  auditMaxBacklog: number;
  /** Finished jobs kept in Redis after mirroring; -1 = none (deleted once mirrored). */
  keepCompletedCount: number;
  keepCompletedMs: number;
  /** Run the audit writer in a worker thread when this process also runs other roles (AUDIT_THREAD, default true). */
  auditThread: boolean;
  /** Nice value (0..19) of the audit writer thread while the mirror is more than 2 s behind (AUDIT_THREAD_NICE, default 10; 0 = never). */
  auditThreadNice: number;
  /** History kept in PostgreSQL, days. */
  retentionDays: number;
  /** HTTP requests allowed per client IP per window (shared through Redis); 0 = no limit. */
  apiRateLimitMax: number;
  apiRateLimitWindowMs: number;
  /** Longest time a client may take to send a whole request (headers and body), ms; slower ones get 408. */
  httpRequestTimeoutMs: number;
  /** Longest time a client may take to send a request's headers, ms (≤ httpRequestTimeoutMs). */
  httpHeadersTimeoutMs: number;
  /** How long an idle keep-alive connection stays open between requests, ms. */
  httpKeepAliveTimeoutMs: number;
  /** Open HTTP connections per process; further connections are closed at once. */
  httpMaxConnections: number;
}

export class ConfigError extends Error {}

/** Node timers hold at most 2^31−1 ms; a longer value would silently fire after 1 ms. */
const MAX_TIMER_MS = 2_147_483_647;

type Env = Record<string, string | undefined>;

function int(env: Env, name: string, def: number, min: number, max = Number.MAX_SAFE_INTEGER): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return def;
  const v = Number(raw);
  if (!Number.isInteger(v) || v < min || v > max) {
    throw new ConfigError(`${name}=${JSON.stringify(raw)} is invalid: expected an integer ${min}..${max}`);
  }
  return v;
}

function bool(env: Env, name: string, def: boolean): boolean {
  const raw = env[name];
  if (raw === undefined || raw === '') return def;
  if (['true', '1', 'yes'].includes(raw.toLowerCase())) return true;
  if (['false', '0', 'no'].includes(raw.toLowerCase())) return false;
  throw new ConfigError(`${name}=${JSON.stringify(raw)} is invalid: expected true or false`);
}

/**
 * Parses and validates the environment.
 * @throws ConfigError naming the first bad variable.
 */
export function loadConfig(env: Env = process.env): SluiceConfig {
  const roleNames = (env.ROLE || 'all').split(',').map((s) => s.trim()).filter(Boolean);
  const roles = new Set<Role>();
  for (const r of roleNames) {
    if (r === 'all') ALL_ROLES.forEach((x) => roles.add(x));
    else if ((ALL_ROLES as readonly string[]).includes(r)) roles.add(r as Role);
    else throw new ConfigError(`ROLE=${JSON.stringify(env.ROLE)} is invalid: "${r}" is not one of all, ${ALL_ROLES.join(', ')}`);
  }
  if (roles.size === 0) throw new ConfigError('ROLE is empty');

  let redisClusterNodes: SluiceConfig['redisClusterNodes'] = null;
  if (env.REDIS_CLUSTER_NODES) {
    redisClusterNodes = env.REDIS_CLUSTER_NODES.split(',').map((hp) => {
      const m = /^\s*([^:\s]+):(\d+)\s*$/.exec(hp);
      if (!m) throw new ConfigError(`REDIS_CLUSTER_NODES is invalid: "${hp}" is not host:port`);
      return { host: m[1], port: Number(m[2]) };
    });
  }
  const redisUrl = env.REDIS_URL || 'redis://127.0.0.1:6379';
  if (!/^rediss?:\/\//.test(redisUrl)) throw new ConfigError(`REDIS_URL=${JSON.stringify(redisUrl)} is invalid: expected redis://host:port`);
  const databaseUrl = env.DATABASE_URL || 'postgres://postgres@127.0.0.1:5432/sluice';
  if (!/^postgres(ql)?:\/\//.test(databaseUrl)) throw new ConfigError(`DATABASE_URL is invalid: expected postgres://...`);
  try {
    new URL(databaseUrl);
  } catch {
    throw new ConfigError(`DATABASE_URL is invalid: not a URL`);
  }
  const redisPrefix = env.REDIS_PREFIX || 'sluice';
  if (!/^[A-Za-z0-9_.:-]{1,64}$/.test(redisPrefix) ) throw new ConfigError(`REDIS_PREFIX=${JSON.stringify(redisPrefix)} is invalid: use letters, digits, _ . : -`);

  const queues = (env.QUEUES || '*').split(',').map((s) => s.trim()).filter(Boolean);
  for (const q of queues) {
    if (q !== '*' && !/^[a-z0-9][a-z0-9_-]{0,63}$/.test(q)) throw new ConfigError(`QUEUES is invalid: "${q}" is not a queue name`);
  }

  let lockTtlMs = int(env, 'LOCK_TTL_MS', -1, 100, MAX_TIMER_MS);
  if (lockTtlMs === -1) lockTtlMs = env.LOCK_TTL_SECONDS ? int(env, 'LOCK_TTL_SECONDS', 30, 1, Math.floor(MAX_TIMER_MS / 1000)) * 1000 : 30_000;
  const heartbeatIntervalMs = int(env, 'HEARTBEAT_INTERVAL_MS', Math.min(10_000, Math.floor(lockTtlMs / 3)), 10, MAX_TIMER_MS);
  if (heartbeatIntervalMs >= lockTtlMs) {
    throw new ConfigError(`HEARTBEAT_INTERVAL_MS=${heartbeatIntervalMs} is invalid: must be less than the lease (LOCK_TTL_MS=${lockTtlMs})`);
  }
  const httpRequestTimeoutMs = int(env, 'HTTP_REQUEST_TIMEOUT_MS', 30_000, 100, 3_600_000);
  const httpHeadersTimeoutMs = int(env, 'HTTP_HEADERS_TIMEOUT_MS', Math.min(10_000, httpRequestTimeoutMs), 100, 3_600_000);
  if (httpHeadersTimeoutMs > httpRequestTimeoutMs) {
    throw new ConfigError(`HTTP_HEADERS_TIMEOUT_MS=${httpHeadersTimeoutMs} is invalid: must not exceed HTTP_REQUEST_TIMEOUT_MS=${httpRequestTimeoutMs}`);
  }
  const logLevel = env.LOG_LEVEL || 'info';
  if (!['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'].includes(logLevel)) {
    throw new ConfigError(`LOG_LEVEL=${JSON.stringify(logLevel)} is invalid`);
  }
  return {
    port: int(env, 'PORT', 3000, 0, 65535),
    host: env.HOST || '127.0.0.1',
    redisUrl,
    redisClusterNodes,
    redisPrefix,
    databaseUrl,
    roles,
    queues,
    workerConcurrency: int(env, 'WORKER_CONCURRENCY', 10, 1, 10_000),
    lockTtlMs,
    heartbeatIntervalMs,
    reaperIntervalMs: int(env, 'REAPER_INTERVAL_MS', 5000, 10, MAX_TIMER_MS),
    shutdownGraceMs: int(env, 'SHUTDOWN_GRACE_MS', 30_000, 0, MAX_TIMER_MS),
    maxRetries: int(env, 'MAX_RETRIES', 3, 1, 100),
    maxPayloadBytes: int(env, 'MAX_PAYLOAD_BYTES', 524_288, 2),
    idempotencyTtlMs: int(env, 'IDEMPOTENCY_TTL_MS', 86_400_000, 1000),
    diagnosticHandlers: bool(env, 'DIAGNOSTIC_HANDLERS', false),
    logLevel,
    auditMaxBacklog: int(env, 'AUDIT_MAX_BACKLOG', 1_000_000, 1),
    keepCompletedCount: int(env, 'KEEP_COMPLETED_COUNT', -1, -1),
    keepCompletedMs: int(env, 'KEEP_COMPLETED_MS', -1, -1),
    auditThread: bool(env, 'AUDIT_THREAD', true),
    auditThreadNice: int(env, 'AUDIT_THREAD_NICE', 10, 0, 19),
    retentionDays: int(env, 'RETENTION_DAYS', 30, 1, 36500),
    apiRateLimitMax: int(env, 'API_RATE_LIMIT_MAX', 0, 0),
    apiRateLimitWindowMs: int(env, 'API_RATE_LIMIT_WINDOW_MS', 60_000, 1, MAX_TIMER_MS),
    httpRequestTimeoutMs,
    httpHeadersTimeoutMs,
    httpKeepAliveTimeoutMs: int(env, 'HTTP_KEEP_ALIVE_TIMEOUT_MS', 5_000, 100, 3_600_000),
    httpMaxConnections: int(env, 'HTTP_MAX_CONNECTIONS', 10_000, 1, 1_000_000),
  };
}
