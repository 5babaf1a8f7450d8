/**
 * The one validated runtime configuration (API.md "Runtime configuration").
 * `loadConfig` reads the environment once; a bad value throws a ConfigError
 * naming the variable, and main.ts stops the process with that message.
 */

import { normalizeAllowHost } from '../core/address-policy';
import { isQualifiedQueue } from '../core/project-queue';

export type Role = 'api' | 'worker' | 'scheduler' | 'audit';
export const ALL_ROLES: readonly Role[] = ['api', 'worker', 'scheduler', 'audit'];

export interface SluiceConfig {
  port: number;
  host: string;
  redisUrl: string;
  /** host:port list; when set, ioredis Cluster is used instead of redisUrl. */
  redisClusterNodes: { host: string; port: number }[] | null;
  /**
   * REDIS_SENTINELS, REDIS_SENTINEL_NAME, REDIS_SENTINEL_PASSWORD: when set, the
   * master is looked up through the Sentinels and followed through failovers;
   * `node` holds what redisUrl still says (the data nodes' user, password, db
   * number and TLS), its host and port are not used. Never with redisClusterNodes.
   */
  redisSentinel: RedisSentinelConfig | null;
  redisPrefix: string;
  databaseUrl: string;
  roles: Set<Role>;
  /** Queues served by this worker, in priority order (qualified names: `<project>/<queue>` outside `default`); ['*'] = all known queues of every project. */
  queues: string[];
  workerConcurrency: number;
  lockTtlMs: number;
  heartbeatIntervalMs: number;
  reaperIntervalMs: number;
  /** Period of the audit role's check for a Redis that came back empty or rewound (src/restore/loss-watch.ts), ms; each reconnect checks too. */
  redisCheckIntervalMs: number;
  shutdownGraceMs: number;
  maxRetries: number;
  maxPayloadBytes: number;
  /** Largest body of `POST /jobs/batch` and `POST /flows`, bytes (MAX_REQUEST_BYTES); larger → 413 unread. */
  maxRequestBytes: number;
  /** Bytes of request bodies being read and parsed at once in this process (MAX_INFLIGHT_BODY_BYTES); beyond → 503. */
  maxInflightBodyBytes: number;
  idempotencyTtlMs: number;
  diagnosticHandlers: boolean;
  logLevel: string;
  /** Pending audit events (all streams) above which enqueue answers 503. */
  auditMaxBacklog: number;
  /** Finished jobs kept in Redis after mirroring; -1 = none (deleted once mirrored). */
  keepCompletedCount: number;
  keepCompletedMs: number;
  /** Run the mirror writer in a worker thread when this process also runs other roles (AUDIT_THREAD, default true). */
  auditThread: boolean;
  /** Nice value (0..19) of the mirror writer thread while the mirror is more than 2 s behind (AUDIT_THREAD_NICE, default 10; 0 = never). */
  auditThreadNice: number;
  /** History kept in PostgreSQL, days. */
  retentionDays: number;
  /** HTTP requests allowed per client IP per window (shared through Redis); 0 = no limit. */
  apiRateLimitMax: number;
  apiRateLimitWindowMs: number;
  /** Hosts the built-in `http.request` handler may reach whatever their address (HTTP_HANDLER_ALLOW_HOSTS), normalized (see normalizeAllowHost). */
  httpHandlerAllowHosts: string[];
  /** Credentials required (AUTH): default on unless HOST is a loopback address. */
  auth: boolean;
  /** SLUICE_BOOTSTRAP_ADMIN_KEY: a root key created at start if absent; null = none. */
  bootstrapAdminKey: string | null;
  /** METRICS_TOKEN: bearer token `GET /metrics` requires; null = none required. */
  metricsToken: string | null;
  /** CORS_ORIGINS: origins (scheme://host[:port], lower case) allowed to make state-changing requests besides the server's own. */
  corsOrigins: Set<string>;
  /** ALLOWED_HOSTS: Host header names (lower case, no port) accepted with AUTH=off besides loopback names and HOST. */
  allowedHosts: Set<string>;
  /** KEY_RATE_LIMIT_PER_SEC: requests per second each API key may make (token bucket refill, all api replicas together); 0 = no limit. */
  keyRateLimitPerSec: number;
  /** KEY_RATE_LIMIT_BURST: the bucket's size (requests a key may make at once); 0 = KEY_RATE_LIMIT_PER_SEC. */
  keyRateLimitBurst: number;
  /** PROJECT_MAX_WAITING: jobs not started yet (waiting or delayed) a project may hold before enqueue answers 429; 0 = no cap. */
  projectMaxWaiting: number;
  /** SESSION_IDLE_MS: a dashboard session ends after this long without activity. */
  sessionIdleMs: number;
  /** SESSION_MAX_MS: a dashboard session ends this long after its login, whatever the activity. */
  sessionMaxMs: number;
  /**
   * TRUST_PROXY: whose `X-Forwarded-For`/`-Proto` Fastify believes (the client
   * address of the login limit, TLS for the cookie's `Secure`): false = nobody
   * (default), true = every hop, a number = that many hops, or a list of
   * proxy addresses/CIDRs.
   */
  trustProxy: boolean | number | string[];
  /** Longest time a client may take to send a whole request (headers and body), ms; slower ones get 408. */
  httpRequestTimeoutMs: number;
  /** Longest time a client may take to send a request's headers, ms (≤ httpRequestTimeoutMs). */
  httpHeadersTimeoutMs: number;
  /** How long an idle keep-alive connection stays open between requests, ms. */
  httpKeepAliveTimeoutMs: number;
  /** Open HTTP connections per process; further connections are closed at once. */
  httpMaxConnections: number;
  /** A request still unanswered this long after it arrived gets 503 `unavailable` (a stalled store), ms; 0 = no deadline. */
  httpAnswerTimeoutMs: number;
  /**
   * Failure summaries by a model (API.md v1.3, docs/failure-summaries.md): SUMMARY_MODEL_URL, an
   * OpenAI-compatible chat-completions endpoint (the operator's own: loopback and private addresses allowed);
   * null = rules summaries only.
   */
  summaryModelUrl: string | null;
  /** SUMMARY_MODEL: the `model` of each request (default `default`). */
  summaryModel: string;
  /** SUMMARY_MODEL_KEY: sent as `Authorization: Bearer`; a secret, never logged; null = none. */
  summaryModelKey: string | null;
  /** SUMMARY_TIMEOUT_MS: one model call at most this long (then the rules summary stays). */
  summaryTimeoutMs: number;
  /** SUMMARY_MAX_PER_HOUR: model calls per hour across the installation; 0 = none. */
  summaryMaxPerHour: number;
  /** SUMMARY_INTERVAL_MS (*ours*): how often the scheduler role looks for groups to summarize. */
  summaryIntervalMs: number;
}

/** Redis through Sentinel (SluiceConfig.redisSentinel). The passwords are secrets: never log this object. */
export interface RedisSentinelConfig {
  sentinels: { host: string; port: number }[];
  /** The master's name in the Sentinels (REDIS_SENTINEL_NAME, default `mymaster`). */
  name: string;
  /** REDIS_SENTINEL_PASSWORD: the Sentinels' own password; null = none. */
  password: string | null;
  /** The data nodes' credentials, database and TLS, from REDIS_URL. */
  node: { username?: string; password?: string; db: number; tls: boolean };
}

export class ConfigError extends Error {}

/** Most Sentinels REDIS_SENTINELS may name (*ours*: a deployment runs 3 or 5). */
export const MAX_SENTINELS = 16;

/**
 * Bytes a one-job body (`POST /jobs`, a complete with its result, ...) may
 * carry besides its payload or result (MAX_PAYLOAD_BYTES): the other fields.
 */
export const BODY_ENVELOPE_BYTES = 65_536;

/** Node timers hold at most 2^31−1 ms; a longer value would silently fire after 1 ms. */
const MAX_TIMER_MS = 2_147_483_647;
/** One year, ms: the longest retention-like duration (as API.md bounds a job's delayMs). */
const YEAR_MS = 31_536_000_000;

/**
 * The range of every integer variable (docs/configuration.md): a value outside
 * stops the process at start naming the variable. Exported for the tests.
 */
export const ENV_BOUNDS = Object.freeze({
  PORT: [0, 65_535],
  WORKER_CONCURRENCY: [1, 10_000],
  LOCK_TTL_MS: [100, MAX_TIMER_MS],
  LOCK_TTL_SECONDS: [1, Math.floor(MAX_TIMER_MS / 1000)],
  HEARTBEAT_INTERVAL_MS: [10, MAX_TIMER_MS],
  REAPER_INTERVAL_MS: [10, MAX_TIMER_MS],
  REDIS_CHECK_INTERVAL_MS: [100, 3_600_000],
  SHUTDOWN_GRACE_MS: [0, MAX_TIMER_MS],
  MAX_RETRIES: [1, 100],
  /** 64 MiB: a payload is one Redis value and one PostgreSQL row. */
  MAX_PAYLOAD_BYTES: [2, 67_108_864],
  /** 1 MiB .. 256 MiB (API.md v1.3): the bodies of POST /jobs/batch and POST /flows. */
  MAX_REQUEST_BYTES: [1_048_576, 268_435_456],
  /**
   * 1 MiB .. 4 GiB (*ours*): bodies being read and parsed at once; a parsed
   * body takes a few times its size in memory, so 4 GiB of them is already
   * more than a process should hold.
   */
  MAX_INFLIGHT_BODY_BYTES: [1_048_576, 4_294_967_296],
  IDEMPOTENCY_TTL_MS: [1000, YEAR_MS],
  AUDIT_MAX_BACKLOG: [1, 100_000_000],
  KEEP_COMPLETED_COUNT: [-1, 10_000_000],
  KEEP_COMPLETED_MS: [-1, YEAR_MS],
  AUDIT_THREAD_NICE: [0, 19],
  RETENTION_DAYS: [1, 36_500],
  API_RATE_LIMIT_MAX: [0, 1_000_000],
  API_RATE_LIMIT_WINDOW_MS: [1, MAX_TIMER_MS],
  KEY_RATE_LIMIT_PER_SEC: [0, 1_000_000],
  KEY_RATE_LIMIT_BURST: [0, 1_000_000],
  PROJECT_MAX_WAITING: [0, 100_000_000],
  /** 1 s .. 7 days (*ours*): the shortest is for tests. */
  SESSION_IDLE_MS: [1000, 604_800_000],
  /** 1 s .. 30 days (*ours*). */
  SESSION_MAX_MS: [1000, 2_592_000_000],
  /** 100 ms .. 1 h (*ours*). */
  HTTP_REQUEST_TIMEOUT_MS: [100, 3_600_000],
  HTTP_HEADERS_TIMEOUT_MS: [100, 3_600_000],
  HTTP_KEEP_ALIVE_TIMEOUT_MS: [100, 3_600_000],
  HTTP_MAX_CONNECTIONS: [1, 1_000_000],
  /** 0 (off) .. 1 h (*ours*). */
  HTTP_ANSWER_TIMEOUT_MS: [0, 3_600_000],
  /** 100 ms .. 10 min (*ours*): one model call. */
  SUMMARY_TIMEOUT_MS: [100, 600_000],
  /** 0 (no calls) .. 100,000 (*ours*). */
  SUMMARY_MAX_PER_HOUR: [0, 100_000],
  /** 100 ms .. 1 h (*ours*). */
  SUMMARY_INTERVAL_MS: [100, 3_600_000],
} as const satisfies Record<string, readonly [number, number]>);

type Env = Record<string, string | undefined>;

/**
 * An integer variable: decimal digits only, with a leading `-` only where its
 * range goes below 0 (`KEEP_COMPLETED_*=-1`) — the rule API.md v1.2 sets for
 * query integers. `1e3`, `0x10`, `12.0`, `+5`, ` 12` are refused rather than
 * read as JavaScript's Number() would; empty or unset means the default.
 * @throws ConfigError naming the variable and its range.
 */
function int(env: Env, name: keyof typeof ENV_BOUNDS, def: number): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return def;
  const [min, max] = ENV_BOUNDS[name];
  // At most 16 digits: every bound is a safe integer, and Number() of a longer run may round into range.
  const v = /^-?[0-9]{1,16}$/.test(raw) ? Number(raw) + 0 : NaN; // + 0: `-0` is 0
  if (!Number.isSafeInteger(v) || v < min || v > max) {
    throw new ConfigError(`${name}=${JSON.stringify(raw)} is invalid: expected an integer ${min}..${max} in decimal digits`);
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

function hostList(env: Env, name: string): string[] {
  const raw = env[name];
  if (raw === undefined || raw.trim() === '') return [];
  return raw.split(',').filter((e) => e.trim() !== '').map((e) => {
    const h = normalizeAllowHost(e);
    if (h === null) throw new ConfigError(`${name} is invalid: ${JSON.stringify(e.trim())} is not a host name or IP address`);
    return h;
  });
}

/** True for a loopback HOST: 127.0.0.0/8, ::1 (also IPv4-mapped), `localhost`. */
export function isLoopbackHost(host: string): boolean {
  const h = host.toLowerCase().replace(/^\[|\]$/g, '').replace(/\.$/, '');
  return h === 'localhost' || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(h) || h === '::1' || /^::ffff:127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(h);
}

function list(env: Env, name: string, check: (s: string) => boolean, what: string): Set<string> {
  const out = new Set<string>();
  for (const raw of (env[name] ?? '').split(',')) {
    const v = raw.trim().toLowerCase();
    if (!v) continue;
    if (!check(v)) throw new ConfigError(`${name} is invalid: "${raw.trim()}" is not ${what}`);
    out.add(v);
  }
  return out;
}

function origin(s: string): boolean {
  try {
    const u = new URL(s);
    return (u.protocol === 'http:' || u.protocol === 'https:') && u.origin === s;
  } catch {
    return false;
  }
}

/** TRUST_PROXY: off (default), on, a hop count 1..16, or a comma list of proxy IP addresses / CIDRs. */
function trustProxy(env: Env): boolean | number | string[] {
  const raw = (env.TRUST_PROXY ?? '').trim().toLowerCase();
  if (raw === '' || raw === 'off' || raw === 'false') return false;
  if (raw === 'on' || raw === 'true') return true;
  if (/^\d+$/.test(raw)) {
    const n = Number(raw);
    if (n < 1 || n > 16) throw new ConfigError(`TRUST_PROXY=${JSON.stringify(env.TRUST_PROXY)} is invalid: a hop count must be 1..16`);
    return n;
  }
  const items = raw.split(',').map((s) => s.trim()).filter(Boolean);
  for (const i of items) {
    if (!/^[0-9a-f:.]{2,45}(\/\d{1,3})?$/.test(i) || !/[.:]/.test(i)) {
      throw new ConfigError(`TRUST_PROXY is invalid: ${JSON.stringify(i)} is not an IP address or CIDR (expected off, on, a hop count or a comma list)`);
    }
  }
  if (items.length > 64) throw new ConfigError('TRUST_PROXY is invalid: at most 64 addresses');
  return items;
}

/** A comma list of `host:port` (ports 1..65535), at most `max` entries. */
function hostPorts(name: string, raw: string, max = Infinity): { host: string; port: number }[] {
  const out = raw.split(',').map((hp) => {
    const m = /^\s*([^:\s]+):(\d+)\s*$/.exec(hp);
    if (!m) throw new ConfigError(`${name} is invalid: "${hp}" is not host:port`);
    const port = Number(m[2]);
    if (port < 1 || port > 65_535) throw new ConfigError(`${name} is invalid: port ${m[2]} is not 1..65535`);
    return { host: m[1], port };
  });
  if (out.length > max) throw new ConfigError(`${name} is invalid: ${out.length} entries, at most ${max}`);
  return out;
}

/** Highest database number REDIS_URL may name (*ours*: Redis's default is 16 databases, 0..15). */
export const MAX_REDIS_DB = 99_999;

/**
 * What REDIS_URL says beyond host and port: user, password, database number
 * (`/N`, decimal digits, 0..MAX_REDIS_DB) and TLS (`rediss:`). Whether the
 * server has that database is checked at start (src/redis/startup-check.ts).
 * @throws ConfigError naming REDIS_URL (never printing its password).
 */
export function parseRedisUrl(redisUrl: string): RedisSentinelConfig['node'] {
  let u: URL;
  try {
    u = new URL(redisUrl);
  } catch {
    throw new ConfigError('REDIS_URL is invalid: not a URL');
  }
  const path = u.pathname.replace(/^\//, '');
  if (!/^[0-9]{0,5}$/.test(path) || Number(path) > MAX_REDIS_DB) {
    throw new ConfigError(`REDIS_URL is invalid: the database number ${JSON.stringify(path.slice(0, 32))} is not an integer 0..${MAX_REDIS_DB}`);
  }
  // ioredis would read `?db=N` as the database too, and the path would hide it.
  if (u.searchParams.has('db')) throw new ConfigError('REDIS_URL is invalid: give the database number as the path (redis://host:port/N), not ?db=');
  return {
    ...(u.username ? { username: decodeURIComponent(u.username) } : {}),
    ...(u.password ? { password: decodeURIComponent(u.password) } : {}),
    db: path === '' ? 0 : Number(path),
    tls: u.protocol === 'rediss:',
  };
}

/**
 * REDIS_SENTINELS and its companions; null without REDIS_SENTINELS (then
 * REDIS_SENTINEL_NAME and REDIS_SENTINEL_PASSWORD are not read). With
 * sentinels, REDIS_URL gives the data nodes' user, password, db and TLS only.
 */
function parseRedisSentinel(env: Env, redisUrl: string): RedisSentinelConfig | null {
  if (!env.REDIS_SENTINELS) return null;
  if (env.REDIS_CLUSTER_NODES) {
    throw new ConfigError('REDIS_SENTINELS and REDIS_CLUSTER_NODES are both set: use Sentinel or Cluster, not both');
  }
  const sentinels = hostPorts('REDIS_SENTINELS', env.REDIS_SENTINELS, MAX_SENTINELS);
  const name = env.REDIS_SENTINEL_NAME || 'mymaster';
  if (!/^[A-Za-z0-9_.-]{1,64}$/.test(name)) {
    throw new ConfigError(`REDIS_SENTINEL_NAME=${JSON.stringify(name)} is invalid: use 1..64 letters, digits, _ . -`);
  }
  const password = env.REDIS_SENTINEL_PASSWORD || null;
  // The value itself is never printed: it is a secret.
  if (password !== null && (password.length > 512 || /\p{Cc}/u.test(password))) {
    throw new ConfigError('REDIS_SENTINEL_PASSWORD is invalid: expected 1..512 characters without control characters');
  }
  const node = parseRedisUrl(redisUrl);
  return { sentinels, name, password, node };
}

/**
 * SUMMARY_MODEL_URL: an http(s) URL without credentials (the key goes in
 * SUMMARY_MODEL_KEY, which is never printed). A URL whose path ends in `/v1`
 * gets `/chat/completions` appended (Ollama's and vLLM's base URL); any other
 * path is used as it is. Loopback and private hosts are allowed: the model is
 * the operator's own (the http.request handler's address rules do not apply).
 */
function summaryModel(env: Env): Pick<SluiceConfig, 'summaryModelUrl' | 'summaryModel' | 'summaryModelKey'> {
  const raw = (env.SUMMARY_MODEL_URL ?? '').trim();
  let url: string | null = null;
  if (raw !== '') {
    let u: URL;
    try {
      u = new URL(raw);
    } catch {
      throw new ConfigError('SUMMARY_MODEL_URL is invalid: not a URL');
    }
    if (u.protocol !== 'http:' && u.protocol !== 'https:') throw new ConfigError('SUMMARY_MODEL_URL is invalid: expected http:// or https://');
    if (u.username || u.password) throw new ConfigError('SUMMARY_MODEL_URL is invalid: put no credentials in the URL, set SUMMARY_MODEL_KEY');
    if (/\/v1\/?$/.test(u.pathname)) u.pathname = `${u.pathname.replace(/\/$/, '')}/chat/completions`;
    u.hash = '';
    url = u.toString();
  }
  const model = env.SUMMARY_MODEL || 'default';
  if (!/^[\x21-\x7e]{1,200}$/.test(model)) throw new ConfigError(`SUMMARY_MODEL=${JSON.stringify(model.slice(0, 64))} is invalid: expected 1..200 printable characters without spaces`);
  const key = env.SUMMARY_MODEL_KEY || null;
  // The value itself is never printed: it is a secret.
  if (key !== null && !/^[\x21-\x7e]{1,4096}$/.test(key)) throw new ConfigError('SUMMARY_MODEL_KEY is invalid: expected 1..4096 printable ASCII characters without spaces');
  return { summaryModelUrl: url, summaryModel: model, summaryModelKey: key };
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

  const redisClusterNodes = env.REDIS_CLUSTER_NODES ? hostPorts('REDIS_CLUSTER_NODES', env.REDIS_CLUSTER_NODES) : null;
  const redisUrl = env.REDIS_URL || 'redis://127.0.0.1:6379';
  if (!/^rediss?:\/\//.test(redisUrl)) throw new ConfigError(`REDIS_URL=${JSON.stringify(redisUrl)} is invalid: expected redis://host:port`);
  const redisDb = parseRedisUrl(redisUrl).db;
  // A cluster has database 0 only (its nodes refuse SELECT of any other).
  if (redisClusterNodes && redisDb !== 0) {
    throw new ConfigError(`REDIS_URL is invalid: it names database ${redisDb}, but Redis Cluster (REDIS_CLUSTER_NODES) has database 0 only`);
  }
  const redisSentinel = parseRedisSentinel(env, redisUrl);
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
    // A queue of another project than `default` is named `<project>/<queue>` (src/core/project-queue.ts).
    if (q !== '*' && !isQualifiedQueue(q)) throw new ConfigError(`QUEUES is invalid: "${q}" is not a queue name (or <project>/<queue>)`);
  }

  let lockTtlMs = int(env, 'LOCK_TTL_MS', -1);
  if (lockTtlMs === -1) lockTtlMs = env.LOCK_TTL_SECONDS ? int(env, 'LOCK_TTL_SECONDS', 30) * 1000 : 30_000;
  const heartbeatIntervalMs = int(env, 'HEARTBEAT_INTERVAL_MS', Math.min(10_000, Math.floor(lockTtlMs / 3)));
  if (heartbeatIntervalMs >= lockTtlMs) {
    throw new ConfigError(`HEARTBEAT_INTERVAL_MS=${heartbeatIntervalMs} is invalid: must be less than the lease (LOCK_TTL_MS=${lockTtlMs})`);
  }
  const httpRequestTimeoutMs = int(env, 'HTTP_REQUEST_TIMEOUT_MS', 30_000);
  const httpHeadersTimeoutMs = int(env, 'HTTP_HEADERS_TIMEOUT_MS', Math.min(10_000, httpRequestTimeoutMs));
  if (httpHeadersTimeoutMs > httpRequestTimeoutMs) {
    throw new ConfigError(`HTTP_HEADERS_TIMEOUT_MS=${httpHeadersTimeoutMs} is invalid: must not exceed HTTP_REQUEST_TIMEOUT_MS=${httpRequestTimeoutMs}`);
  }
  const logLevel = env.LOG_LEVEL || 'info';
  if (!['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'].includes(logLevel)) {
    throw new ConfigError(`LOG_LEVEL=${JSON.stringify(logLevel)} is invalid`);
  }
  const host = env.HOST || '127.0.0.1';
  let auth: boolean;
  if (env.AUTH === undefined || env.AUTH === '') auth = !isLoopbackHost(host);
  else if (env.AUTH === 'on' || env.AUTH === 'off') auth = env.AUTH === 'on';
  else throw new ConfigError(`AUTH=${JSON.stringify(env.AUTH)} is invalid: expected on or off`);
  const bootstrapAdminKey = env.SLUICE_BOOTSTRAP_ADMIN_KEY || null;
  if (bootstrapAdminKey !== null && !/^sk_[A-Za-z0-9_-]{32,200}$/.test(bootstrapAdminKey)) {
    // The value itself is never printed: it is a secret.
    throw new ConfigError('SLUICE_BOOTSTRAP_ADMIN_KEY is invalid: expected sk_ followed by 32..200 URL-safe characters (A-Z a-z 0-9 _ -)');
  }
  const metricsToken = env.METRICS_TOKEN || null;
  if (metricsToken !== null && !/^[\x21-\x7e]{16,512}$/.test(metricsToken)) {
    throw new ConfigError('METRICS_TOKEN is invalid: expected 16..512 printable ASCII characters without spaces');
  }
  const maxPayloadBytes = int(env, 'MAX_PAYLOAD_BYTES', 524_288);
  const maxRequestBytes = int(env, 'MAX_REQUEST_BYTES', 16_777_216);
  const maxInflightBodyBytes = int(env, 'MAX_INFLIGHT_BODY_BYTES', 268_435_456);
  // A body the in-flight bound could never admit would be refused 503 ("retry") for ever.
  const largestBody = Math.max(maxRequestBytes, maxPayloadBytes + BODY_ENVELOPE_BYTES);
  if (maxInflightBodyBytes < largestBody) {
    throw new ConfigError(
      `MAX_INFLIGHT_BODY_BYTES=${maxInflightBodyBytes} is invalid: must be at least the largest body a route reads, ${largestBody} ` +
        `(MAX_REQUEST_BYTES=${maxRequestBytes}, MAX_PAYLOAD_BYTES + ${BODY_ENVELOPE_BYTES} = ${maxPayloadBytes + BODY_ENVELOPE_BYTES})`,
    );
  }
  return {
    port: int(env, 'PORT', 3000),
    host,
    redisUrl,
    redisClusterNodes,
    redisSentinel,
    redisPrefix,
    databaseUrl,
    roles,
    queues,
    workerConcurrency: int(env, 'WORKER_CONCURRENCY', 10),
    lockTtlMs,
    heartbeatIntervalMs,
    reaperIntervalMs: int(env, 'REAPER_INTERVAL_MS', 5000),
    redisCheckIntervalMs: int(env, 'REDIS_CHECK_INTERVAL_MS', 5000),
    shutdownGraceMs: int(env, 'SHUTDOWN_GRACE_MS', 30_000),
    maxRetries: int(env, 'MAX_RETRIES', 3),
    maxPayloadBytes,
    maxRequestBytes,
    maxInflightBodyBytes,
    idempotencyTtlMs: int(env, 'IDEMPOTENCY_TTL_MS', 86_400_000),
    diagnosticHandlers: bool(env, 'DIAGNOSTIC_HANDLERS', false),
    logLevel,
    auditMaxBacklog: int(env, 'AUDIT_MAX_BACKLOG', 1_000_000),
    keepCompletedCount: int(env, 'KEEP_COMPLETED_COUNT', -1),
    keepCompletedMs: int(env, 'KEEP_COMPLETED_MS', -1),
    auditThread: bool(env, 'AUDIT_THREAD', true),
    auditThreadNice: int(env, 'AUDIT_THREAD_NICE', 10),
    retentionDays: int(env, 'RETENTION_DAYS', 30),
    apiRateLimitMax: int(env, 'API_RATE_LIMIT_MAX', 0),
    apiRateLimitWindowMs: int(env, 'API_RATE_LIMIT_WINDOW_MS', 60_000),
    httpHandlerAllowHosts: hostList(env, 'HTTP_HANDLER_ALLOW_HOSTS'),
    auth,
    bootstrapAdminKey,
    metricsToken,
    corsOrigins: list(env, 'CORS_ORIGINS', origin, 'an origin like https://console.example.com'),
    keyRateLimitPerSec: int(env, 'KEY_RATE_LIMIT_PER_SEC', 0),
    keyRateLimitBurst: int(env, 'KEY_RATE_LIMIT_BURST', 0),
    projectMaxWaiting: int(env, 'PROJECT_MAX_WAITING', 0),
    allowedHosts: list(env, 'ALLOWED_HOSTS', (h) => /^[a-z0-9.-]{1,253}$|^\[[0-9a-f:.]+\]$/.test(h), 'a host name'),
    sessionIdleMs: int(env, 'SESSION_IDLE_MS', 1_800_000),
    sessionMaxMs: int(env, 'SESSION_MAX_MS', 43_200_000),
    trustProxy: trustProxy(env),
    httpRequestTimeoutMs,
    httpHeadersTimeoutMs,
    httpKeepAliveTimeoutMs: int(env, 'HTTP_KEEP_ALIVE_TIMEOUT_MS', 5_000),
    httpMaxConnections: int(env, 'HTTP_MAX_CONNECTIONS', 10_000),
    httpAnswerTimeoutMs: int(env, 'HTTP_ANSWER_TIMEOUT_MS', 10_000),
    ...summaryModel(env),
    summaryTimeoutMs: int(env, 'SUMMARY_TIMEOUT_MS', 20_000),
    summaryMaxPerHour: int(env, 'SUMMARY_MAX_PER_HOUR', 30),
    summaryIntervalMs: int(env, 'SUMMARY_INTERVAL_MS', 5_000),
  };
}
