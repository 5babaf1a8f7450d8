import { connect as tlsConnect } from 'node:tls';
import Redis from 'ioredis';
import type { RedisSentinelConfig } from '../config/config';
import { parseRedisUrl } from '../config/config';
import { describeRedis, RedisConnectionConfig } from './connection';

/**
 * Why Redis did not answer at start, found by short probes of their own (the
 * process's client retries for ever and only ever says "not connected").
 * `retry`: the configuration works but Redis is not ready yet (it is loading
 * its dataset): the caller waits again instead of stopping.
 * `message` starts with the variable to fix (REDIS_URL, REDIS_SENTINELS,
 * REDIS_SENTINEL_NAME, REDIS_SENTINEL_PASSWORD, REDIS_CLUSTER_NODES) and never
 * holds a password.
 */
export interface RedisDiagnosis {
  retry: boolean;
  message: string;
}

/** One probe's outcome: a reply, a reply error (the server spoke Redis), or no Redis conversation at all. */
type Probe = { ok: true; reply: unknown } | { ok: false; replyError: boolean; error: string };

interface NodeAddress {
  host: string;
  port: number;
}

/**
 * Sends one command to host:port on a connection of its own: no retry, no
 * offline queue, at most `timeoutMs` for the connection and as much for the
 * reply (ms). Never throws.
 */
async function probe(addr: NodeAddress, auth: { username?: string; password?: string; tls?: boolean }, command: string[], timeoutMs: number): Promise<Probe> {
  const r = new Redis({
    host: addr.host,
    port: addr.port,
    ...(auth.username !== undefined ? { username: auth.username } : {}),
    ...(auth.password !== undefined ? { password: auth.password } : {}),
    ...(auth.tls ? { tls: {} } : {}),
    lazyConnect: true,
    enableReadyCheck: false,
    retryStrategy: () => null,
    maxRetriesPerRequest: 0,
    connectTimeout: timeoutMs,
    commandTimeout: timeoutMs,
  });
  let lastEvent = '';
  r.on('error', (e: Error) => (lastEvent = e.message));
  try {
    await r.connect();
    return { ok: true, reply: await r.call(command[0], ...command.slice(1)) };
  } catch (e) {
    const err = e as Error;
    // A ReplyError is the server's own answer; anything else is the connection's.
    const replyError = err.name === 'ReplyError';
    return { ok: false, replyError, error: replyError ? err.message : lastEvent || err.message };
  } finally {
    r.disconnect();
  }
}

/** Whether a TLS handshake with host:port completes within timeoutMs (certificate not checked: only "does it speak TLS"). */
function speaksTls(addr: NodeAddress, timeoutMs: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = tlsConnect({ host: addr.host, port: addr.port, rejectUnauthorized: false });
    const done = (v: boolean) => {
      clearTimeout(t);
      s.destroy();
      resolve(v);
    };
    const t = setTimeout(() => done(false), timeoutMs);
    s.once('secureConnect', () => done(true));
    s.once('error', () => done(false));
  });
}

const AUTH_REFUSED = /^(NOAUTH|WRONGPASS|NOPERM)\b|invalid (username|password)/i;
/** Replies of a server that is there but not ready yet (loading its dataset; a replica syncing). */
const NOT_READY = /^(LOADING|MASTERDOWN)\b/;
const short = (s: string) => (s.length > 200 ? `${s.slice(0, 200)}…` : s).trim();

/**
 * What is wrong with the data node at `addr`, spoken to as REDIS_URL says
 * (user, password, TLS): `who` names it in the message (`REDIS_URL=…` or the
 * master the Sentinels named).
 */
async function diagnoseNode(addr: NodeAddress, node: RedisSentinelConfig['node'], who: string, timeoutMs: number): Promise<RedisDiagnosis> {
  const at = `${addr.host}:${addr.port}`;
  const p = await probe(addr, node, ['PING'], timeoutMs);
  if (p.ok) return { retry: false, message: `${who}: Redis at ${at} answers a probe, but the connection did not become ready` };
  if (p.replyError && NOT_READY.test(p.error)) return { retry: true, message: `${who}: Redis at ${at} is not ready yet (${short(p.error)})` };
  if (p.replyError && AUTH_REFUSED.test(p.error)) {
    return { retry: false, message: `REDIS_URL: Redis at ${at} refuses its user or password (${short(p.error)})` };
  }
  if (p.replyError) return { retry: false, message: `${who}: Redis at ${at} answers ${short(p.error)}` };
  // No Redis conversation: the wrong protocol, or nothing there.
  if (node.tls) {
    const plain = await probe(addr, { ...node, tls: false }, ['PING'], timeoutMs);
    if (plain.ok || plain.replyError) {
      return { retry: false, message: `REDIS_URL: rediss:// asks for TLS, but Redis at ${at} speaks plain TCP (no TLS): use redis://` };
    }
  } else if (await speaksTls(addr, timeoutMs)) {
    return { retry: false, message: `REDIS_URL: ${at} expects TLS: use rediss://` };
  }
  return { retry: false, message: `${who}: cannot reach Redis at ${at} (${short(p.error)})` };
}

/** What one Sentinel says of the master's name. */
type SentinelAnswer =
  | { kind: 'master'; addr: NodeAddress }
  | { kind: 'unknown-name' }
  | { kind: 'not-sentinel'; error: string }
  | { kind: 'auth'; error: string }
  | { kind: 'unreachable'; error: string };

async function askSentinel(addr: NodeAddress, s: RedisSentinelConfig, timeoutMs: number): Promise<SentinelAnswer> {
  const p = await probe(addr, s.password !== null ? { password: s.password } : {}, ['SENTINEL', 'GET-MASTER-ADDR-BY-NAME', s.name], timeoutMs);
  if (p.ok) {
    const r = p.reply;
    if (Array.isArray(r) && r.length === 2) return { kind: 'master', addr: { host: String(r[0]), port: Number(r[1]) } };
    return { kind: 'unknown-name' };
  }
  if (!p.replyError) return { kind: 'unreachable', error: p.error };
  if (AUTH_REFUSED.test(p.error)) return { kind: 'auth', error: p.error };
  // A Redis server, not a Sentinel: "ERR unknown command 'sentinel'" (or a proxy's refusal).
  return { kind: 'not-sentinel', error: p.error };
}

async function diagnoseSentinel(s: RedisSentinelConfig, timeoutMs: number): Promise<RedisDiagnosis> {
  const answers = await Promise.all(s.sentinels.map(async (a) => ({ at: `${a.host}:${a.port}`, answer: await askSentinel(a, s, timeoutMs) })));
  const env = `REDIS_SENTINELS=${s.sentinels.map((a) => `${a.host}:${a.port}`).join(',')}`;
  const each = answers
    .map(({ at, answer: a }) => {
      if (a.kind === 'master') return `${at}: master at ${a.addr.host}:${a.addr.port}`;
      if (a.kind === 'unknown-name') return `${at}: no master named "${s.name}"`;
      if (a.kind === 'not-sentinel') return `${at}: not a Sentinel (answers ${short(a.error)})`;
      return `${at}: ${short(a.error)}`;
    })
    .join('; ');
  const master = answers.find((x) => x.answer.kind === 'master')?.answer;
  if (master?.kind === 'master') {
    return diagnoseNode(master.addr, s.node, `REDIS_SENTINEL_NAME="${s.name}" (the master the Sentinels of ${env} name)`, timeoutMs);
  }
  const some = (kind: SentinelAnswer['kind']) => answers.some((x) => x.answer.kind === kind);
  if (some('unknown-name')) return { retry: false, message: `REDIS_SENTINEL_NAME="${s.name}": no Sentinel of ${env} knows a master by that name (${each})` };
  if (some('auth')) return { retry: false, message: `REDIS_SENTINEL_PASSWORD: the Sentinels of ${env} refuse it (${each})` };
  if (some('not-sentinel')) return { retry: false, message: `${env}: not a Sentinel, a Redis server answers there (${each})` };
  return { retry: false, message: `${env}: no Sentinel answers (${each})` };
}

/**
 * Finds why the configured Redis did not answer: asks each Sentinel for the
 * master (REDIS_SENTINELS), or probes the node REDIS_URL names, in plain TCP
 * and TLS to tell a protocol mismatch from nothing listening. Takes at most
 * about 3 × timeoutMs (ms). `lastError` is what the process's own client last
 * reported, used when the probes find nothing more precise (a cluster).
 */
export async function diagnoseRedis(config: RedisConnectionConfig, lastError: string | null, timeoutMs: number): Promise<RedisDiagnosis> {
  if (config.redisClusterNodes) {
    return { retry: false, message: `${describeRedis(config)}: the cluster did not become ready${lastError ? ` (${short(lastError)})` : ''}` };
  }
  if (config.redisSentinel) return diagnoseSentinel(config.redisSentinel, timeoutMs);
  const u = new URL(config.redisUrl);
  const addr = { host: u.hostname.replace(/^\[|\]$/g, '') || '127.0.0.1', port: Number(u.port || 6379) };
  return diagnoseNode(addr, parseRedisUrl(config.redisUrl), describeRedis(config), timeoutMs);
}
