import { ConfigError, ENV_BOUNDS, loadConfig, MAX_REDIS_DB, MAX_SENTINELS } from './config';

/** The value each variable sets in the loaded config (docs/configuration.md). */
const FIELD: Record<keyof typeof ENV_BOUNDS, string> = {
  PORT: 'port',
  WORKER_CONCURRENCY: 'workerConcurrency',
  LOCK_TTL_MS: 'lockTtlMs',
  LOCK_TTL_SECONDS: 'lockTtlMs',
  HEARTBEAT_INTERVAL_MS: 'heartbeatIntervalMs',
  REAPER_INTERVAL_MS: 'reaperIntervalMs',
  REDIS_CHECK_INTERVAL_MS: 'redisCheckIntervalMs',
  SHUTDOWN_GRACE_MS: 'shutdownGraceMs',
  MAX_RETRIES: 'maxRetries',
  MAX_PAYLOAD_BYTES: 'maxPayloadBytes',
  MAX_REQUEST_BYTES: 'maxRequestBytes',
  MAX_INFLIGHT_BODY_BYTES: 'maxInflightBodyBytes',
  IDEMPOTENCY_TTL_MS: 'idempotencyTtlMs',
  AUDIT_MAX_BACKLOG: 'auditMaxBacklog',
  KEEP_COMPLETED_COUNT: 'keepCompletedCount',
  KEEP_COMPLETED_MS: 'keepCompletedMs',
  AUDIT_THREAD_NICE: 'auditThreadNice',
  RETENTION_DAYS: 'retentionDays',
  API_RATE_LIMIT_MAX: 'apiRateLimitMax',
  API_RATE_LIMIT_WINDOW_MS: 'apiRateLimitWindowMs',
  KEY_RATE_LIMIT_PER_SEC: 'keyRateLimitPerSec',
  KEY_RATE_LIMIT_BURST: 'keyRateLimitBurst',
  PROJECT_MAX_WAITING: 'projectMaxWaiting',
  SESSION_IDLE_MS: 'sessionIdleMs',
  SESSION_MAX_MS: 'sessionMaxMs',
  HTTP_REQUEST_TIMEOUT_MS: 'httpRequestTimeoutMs',
  HTTP_HEADERS_TIMEOUT_MS: 'httpHeadersTimeoutMs',
  HTTP_KEEP_ALIVE_TIMEOUT_MS: 'httpKeepAliveTimeoutMs',
  HTTP_MAX_CONNECTIONS: 'httpMaxConnections',
  HTTP_ANSWER_TIMEOUT_MS: 'httpAnswerTimeoutMs',
  SUMMARY_TIMEOUT_MS: 'summaryTimeoutMs',
  SUMMARY_MAX_PER_HOUR: 'summaryMaxPerHour',
  SUMMARY_INTERVAL_MS: 'summaryIntervalMs',
};

/** What else a variable needs to be accepted at its bound (the heartbeat must stay below the lease). */
const WITH: Partial<Record<keyof typeof ENV_BOUNDS, (v: number) => Record<string, string>>> = {
  HEARTBEAT_INTERVAL_MS: (v) => ({ LOCK_TTL_MS: String(Math.min(Math.max(v + 1, 100), 2_147_483_647)) }),
  HTTP_HEADERS_TIMEOUT_MS: (v) => ({ HTTP_REQUEST_TIMEOUT_MS: String(Math.min(Math.max(v, 100), 3_600_000)) }),
  // The in-flight bound admits the largest body: at its least, bodies of 1 MiB.
  MAX_INFLIGHT_BODY_BYTES: (v) => ({ MAX_REQUEST_BYTES: String(Math.min(Math.max(v, 1_048_576), 268_435_456)) }),
};

const names = Object.keys(ENV_BOUNDS) as (keyof typeof ENV_BOUNDS)[];
const load = (name: keyof typeof ENV_BOUNDS, v: number | string) => loadConfig({ [name]: String(v), ...(typeof v === 'number' ? WITH[name]?.(v) : {}) });
/** The message of the ConfigError `fn` throws, after a `^` marking its start ('' when it throws none). */
const refusal = (fn: () => unknown): string => {
  try {
    fn();
  } catch (e) {
    expect(e).toBeInstanceOf(ConfigError);
    return `^${(e as Error).message}`;
  }
  return '';
};
const scaled = (name: string, v: number) => (name === 'LOCK_TTL_SECONDS' ? v * 1000 : v);

describe('env bounds: every integer variable has a documented range', () => {
  it('covers every integer of the config', () => {
    expect(new Set(Object.values(FIELD)).size).toBe(names.length - 1); // LOCK_TTL_SECONDS sets lockTtlMs too
    for (const n of names) expect(Number.isSafeInteger(ENV_BOUNDS[n][1])).toBe(true);
  });

  it.each(names)('%s: min and max accepted, one past either (or not an integer) refused naming it', (name) => {
    const [min, max] = ENV_BOUNDS[name];
    // The heartbeat must be below the lease, whose largest value is the timer limit.
    const top = name === 'HEARTBEAT_INTERVAL_MS' ? max - 1 : max;
    expect((load(name, min) as unknown as Record<string, number>)[FIELD[name]]).toBe(scaled(name, min));
    expect((load(name, top) as unknown as Record<string, number>)[FIELD[name]]).toBe(scaled(name, top));
    for (const bad of [max + 1, min - 1, '1e400', '12abc', '1.5']) {
      expect(() => load(name, bad)).toThrow(ConfigError);
      expect(() => load(name, bad)).toThrow(new RegExp(`^${name}=`));
    }
  });

  // One rule for every integer variable: decimal digits, a leading '-' only where the range allows it (API.md v1.2, query integers).
  it.each(names)('%s: only decimal digits (1e3, 0x10, " 12", "12.0", "+5" refused naming it; -1 only where the range allows; empty = the default)', (name) => {
    const [min] = ENV_BOUNDS[name];
    for (const bad of ['1e3', '0x10', ' 12', '12 ', '12.0', '+5', '1_000', '１２', 'Infinity', '12345678901234567']) {
      expect(refusal(() => load(name, bad))).toContain(`^${name}=${JSON.stringify(bad)} is invalid: expected an integer`);
    }
    if (min <= -1) expect((load(name, '-1') as unknown as Record<string, number>)[FIELD[name]]).toBe(-1);
    else expect(refusal(() => load(name, '-1'))).toContain(`^${name}="-1" is invalid`);
    expect(loadConfig({ [name]: '' })).toEqual(loadConfig({}));
  });

  it('a value in decimal digits is read as such: leading zeros, and -0 as 0', () => {
    expect(loadConfig({ WORKER_CONCURRENCY: '012' }).workerConcurrency).toBe(12);
    expect(Object.is(loadConfig({ PORT: '-0' }).port, 0)).toBe(true);
  });

  it('durations that feed a Node timer stay within 2^31-1 ms', () => {
    for (const n of ['LOCK_TTL_MS', 'HEARTBEAT_INTERVAL_MS', 'REAPER_INTERVAL_MS', 'SHUTDOWN_GRACE_MS', 'API_RATE_LIMIT_WINDOW_MS'] as const) {
      expect(ENV_BOUNDS[n][1]).toBe(2_147_483_647);
    }
  });

  it('REDIS_CLUSTER_NODES ports must be 1..65535', () => {
    expect(loadConfig({ REDIS_CLUSTER_NODES: 'a:1,b:65535' }).redisClusterNodes).toEqual([{ host: 'a', port: 1 }, { host: 'b', port: 65535 }]);
    expect(() => loadConfig({ REDIS_CLUSTER_NODES: 'a:65536' })).toThrow(/^REDIS_CLUSTER_NODES is invalid/);
    expect(() => loadConfig({ REDIS_CLUSTER_NODES: 'a:0' })).toThrow(/^REDIS_CLUSTER_NODES is invalid/);
  });
});

describe('REDIS_URL', () => {
  it('a database number is decimal digits 0..99999 in the path, refused otherwise before any connection', () => {
    expect(() => loadConfig({ REDIS_URL: 'redis://h:1/15' })).not.toThrow();
    expect(() => loadConfig({ REDIS_URL: `redis://h:1/${MAX_REDIS_DB}` })).not.toThrow();
    for (const bad of ['/100000', '/1e3', '/0x10', '/-1', '/+5', '/x', '/3/', '/%31', '/3.0']) {
      expect(() => loadConfig({ REDIS_URL: `redis://h:1${bad}` })).toThrow(/^REDIS_URL is invalid: the database number/);
    }
    expect(() => loadConfig({ REDIS_URL: 'redis://h:1?db=3' })).toThrow(/^REDIS_URL is invalid: give the database number as the path/);
    expect(() => loadConfig({ REDIS_URL: 'redis://[x' })).toThrow(/^REDIS_URL is invalid: not a URL/);
  });

  it('never prints the password when refused', () => {
    expect(() => loadConfig({ REDIS_URL: 'redis://:hunter2@h:1/x' })).toThrow(ConfigError);
    try {
      loadConfig({ REDIS_URL: 'redis://:hunter2@h:1/x' });
    } catch (e) {
      expect((e as Error).message).not.toContain('hunter2');
    }
  });

  it('with REDIS_CLUSTER_NODES, a database other than 0 is refused (a cluster has database 0 only)', () => {
    expect(loadConfig({ REDIS_CLUSTER_NODES: 'a:1', REDIS_URL: 'redis://h:1/0' }).redisClusterNodes).toHaveLength(1);
    expect(() => loadConfig({ REDIS_CLUSTER_NODES: 'a:1', REDIS_URL: 'redis://h:1/2' })).toThrow(
      new ConfigError('REDIS_URL is invalid: it names database 2, but Redis Cluster (REDIS_CLUSTER_NODES) has database 0 only'),
    );
  });
});

describe('REDIS_SENTINELS', () => {
  it('is off by default; REDIS_SENTINEL_NAME and _PASSWORD are not read without it', () => {
    expect(loadConfig({}).redisSentinel).toBeNull();
    expect(loadConfig({ REDIS_SENTINEL_NAME: 'x y', REDIS_SENTINEL_PASSWORD: 'p' }).redisSentinel).toBeNull();
  });

  it('host:port list, master name `mymaster` by default, REDIS_URL gives only user, password, db and TLS', () => {
    expect(loadConfig({ REDIS_SENTINELS: 's1:26379, s2:26380', REDIS_URL: 'redis://redis.example:6379' }).redisSentinel).toEqual({
      sentinels: [{ host: 's1', port: 26379 }, { host: 's2', port: 26380 }],
      name: 'mymaster',
      password: null,
      node: { db: 0, tls: false },
    });
    const c = loadConfig({
      REDIS_SENTINELS: '10.0.0.1:26379',
      REDIS_SENTINEL_NAME: 'jobs-1',
      REDIS_SENTINEL_PASSWORD: 's3cret pass',
      REDIS_URL: 'rediss://app:p%40ss@ignored:1/3',
    }).redisSentinel;
    expect(c).toEqual({
      sentinels: [{ host: '10.0.0.1', port: 26379 }],
      name: 'jobs-1',
      password: 's3cret pass',
      node: { username: 'app', password: 'p@ss', db: 3, tls: true },
    });
    expect(loadConfig({ REDIS_SENTINELS: 'a:1', REDIS_URL: 'redis://:pw@h/' }).redisSentinel!.node).toEqual({ password: 'pw', db: 0, tls: false });
  });

  it('refuses bad entries, too many Sentinels, a bad name, a bad database number naming the variable', () => {
    for (const bad of ['a', 'a:', ':1', 'a:0', 'a:65536', 'a:1,', 'a:1,,b:2', 'a b:1']) {
      expect(() => loadConfig({ REDIS_SENTINELS: bad })).toThrow(/^REDIS_SENTINELS is invalid/);
    }
    const many = (n: number) => Array.from({ length: n }, (_, i) => `s${i}:26379`).join(',');
    expect(loadConfig({ REDIS_SENTINELS: many(MAX_SENTINELS) }).redisSentinel!.sentinels).toHaveLength(MAX_SENTINELS);
    expect(() => loadConfig({ REDIS_SENTINELS: many(MAX_SENTINELS + 1) })).toThrow(/^REDIS_SENTINELS is invalid: 17 entries, at most 16/);
    for (const bad of ['my master', 'a/b', 'x'.repeat(65), 'é']) {
      expect(() => loadConfig({ REDIS_SENTINELS: 'a:1', REDIS_SENTINEL_NAME: bad })).toThrow(/^REDIS_SENTINEL_NAME=/);
    }
    expect(() => loadConfig({ REDIS_SENTINELS: 'a:1', REDIS_URL: 'redis://h:1/x' })).toThrow(/^REDIS_URL is invalid: the database number/);
  });

  it('refuses a bad REDIS_SENTINEL_PASSWORD without printing it', () => {
    for (const bad of ['line\nbreak', 'x'.repeat(513)]) {
      let msg = '';
      try {
        loadConfig({ REDIS_SENTINELS: 'a:1', REDIS_SENTINEL_PASSWORD: bad });
      } catch (e) {
        msg = (e as Error).message;
      }
      expect(msg).toMatch(/^REDIS_SENTINEL_PASSWORD is invalid/);
      expect(msg).not.toContain(bad.slice(0, 8));
    }
  });

  it('with REDIS_CLUSTER_NODES is refused', () => {
    expect(() => loadConfig({ REDIS_SENTINELS: 'a:1', REDIS_CLUSTER_NODES: 'b:2' })).toThrow(
      new ConfigError('REDIS_SENTINELS and REDIS_CLUSTER_NODES are both set: use Sentinel or Cluster, not both'),
    );
  });
});

describe('TRUST_PROXY', () => {
  it('is off by default; on, a hop count 1..16 or a list of addresses/CIDRs', () => {
    expect(loadConfig({}).trustProxy).toBe(false);
    expect(loadConfig({ TRUST_PROXY: 'off' }).trustProxy).toBe(false);
    expect(loadConfig({ TRUST_PROXY: 'on' }).trustProxy).toBe(true);
    expect(loadConfig({ TRUST_PROXY: '2' }).trustProxy).toBe(2);
    expect(loadConfig({ TRUST_PROXY: '10.0.0.0/8, 127.0.0.1,::1' }).trustProxy).toEqual(['10.0.0.0/8', '127.0.0.1', '::1']);
  });
  it('refuses anything else naming the variable', () => {
    for (const bad of ['0', '17', 'maybe', 'example.com', '10.0.0.1;rm']) expect(() => loadConfig({ TRUST_PROXY: bad })).toThrow(/^TRUST_PROXY/);
  });
});

describe('QUEUES', () => {
  it('takes *, bare names (the default project) and qualified names <project>/<queue>', () => {
    expect(loadConfig({}).queues).toEqual(['*']);
    expect(loadConfig({ QUEUES: 'emails, acme/images,acme-x/q' }).queues).toEqual(['emails', 'acme/images', 'acme-x/q']);
  });
  it('refuses anything else naming the variable (default/x is x: one name per queue)', () => {
    for (const bad of ['Emails', 'default/emails', 'acme/', '/q', 'a/b/c', 'acme/Q']) expect(() => loadConfig({ QUEUES: bad })).toThrow(/^QUEUES/);
  });
});

describe('MAX_REQUEST_BYTES and MAX_INFLIGHT_BODY_BYTES', () => {
  it('default to 16 MiB and 256 MiB', () => {
    expect(loadConfig({})).toMatchObject({ maxRequestBytes: 16_777_216, maxInflightBodyBytes: 268_435_456 });
  });

  it('refuse an in-flight bound below the largest body a route reads, naming the variable', () => {
    expect(() => loadConfig({ MAX_INFLIGHT_BODY_BYTES: '8388608' })).toThrow(/^MAX_INFLIGHT_BODY_BYTES=8388608 is invalid: must be at least the largest body a route reads, 16777216 /);
    expect(() => loadConfig({ MAX_PAYLOAD_BYTES: '67108864', MAX_INFLIGHT_BODY_BYTES: '33554432' })).toThrow(/^MAX_INFLIGHT_BODY_BYTES=33554432 is invalid: .*67174400/);
    expect(loadConfig({ MAX_REQUEST_BYTES: '8388608', MAX_INFLIGHT_BODY_BYTES: '8388608' })).toMatchObject({ maxRequestBytes: 8_388_608, maxInflightBodyBytes: 8_388_608 });
  });
});

describe('failure summaries by a model (SUMMARY_*)', () => {
  it('defaults: no model, 20 s, 30 an hour', () => {
    const c = loadConfig({});
    expect(c).toMatchObject({ summaryModelUrl: null, summaryModel: 'default', summaryModelKey: null, summaryTimeoutMs: 20_000, summaryMaxPerHour: 30 });
  });
  it('takes a loopback or private URL; a /v1 base gets /chat/completions', () => {
    expect(loadConfig({ SUMMARY_MODEL_URL: 'http://127.0.0.1:11434/v1' }).summaryModelUrl).toBe('http://127.0.0.1:11434/v1/chat/completions');
    expect(loadConfig({ SUMMARY_MODEL_URL: 'http://10.1.2.3:8000/v1/chat/completions' }).summaryModelUrl).toBe('http://10.1.2.3:8000/v1/chat/completions');
  });
  it('refuses a bad URL, credentials in it, a bad model or key, never printing the key', () => {
    for (const env of [{ SUMMARY_MODEL_URL: 'ftp://x/' }, { SUMMARY_MODEL_URL: 'not a url' }, { SUMMARY_MODEL_URL: 'http://u:p@127.0.0.1/v1' }, { SUMMARY_MODEL: 'a b' }]) {
      expect(() => loadConfig(env)).toThrow(ConfigError);
    }
    const key = 'sk-secret with space';
    expect(refusal(() => loadConfig({ SUMMARY_MODEL_KEY: key }))).toMatch(/^\^SUMMARY_MODEL_KEY is invalid/);
    expect(refusal(() => loadConfig({ SUMMARY_MODEL_KEY: key }))).not.toContain('secret');
    expect(refusal(() => loadConfig({ SUMMARY_MAX_PER_HOUR: '-1' }))).toMatch(/SUMMARY_MAX_PER_HOUR/);
  });
});
