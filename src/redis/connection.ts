import Redis, { Cluster, RedisOptions } from 'ioredis';
import type { RedisSentinelConfig, SluiceConfig } from '../config/config';

/** A single-node (or Sentinel) client or a cluster client; both run the same scripts. */
export type RedisClient = Redis | Cluster;

/**
 * Scripts written to the socket as soon as they are issued (see createRedis;
 * RedisScripts reads this list from the client's options); single node only. On a cluster each unpipelined call is retried on its own
 * during a slot migration (TRYAGAIN waits, MOVED does not), so a later call
 * could overtake an earlier one and break FIFO; ioredis runs one auto-pipeline
 * per node at a time and retries it whole, which keeps them in order.
 * - enqueueJobs: see RedisJobStore.enqueue (pipelined group commit).
 * - claimJobs: a claim no longer waits a turn for the auto-pipeline nor for the
 *   one that is in flight, so Redis runs a worker's claim while Node handles
 *   the jobs of the previous one (processing +30–40 %, idle latency p99 about
 *   1 ms lower in paired runs). A claim may now reach Redis before the acks of
 *   the same turn; with maxConcurrency it then sees fewer free slots, and the
 *   acks' wake-up makes the worker claim again.
 */
const UNPIPELINED = ['enqueueJobs', 'claimJobs'];

/**
 * How long a command may wait for its first byte back before the connection
 * is dropped and made again, ms (ioredis `socketTimeout`). Far above any
 * script's run (milliseconds) and a short stall (CASES C26: 4 s), below the
 * TCP keepalive that would otherwise notice a frozen master after minutes.
 */
export const SOCKET_TIMEOUT_MS = 10_000;
/** The same for blocking connections (BLPOP of idle workers ≤ 5 s, long polls 1 s at a time), ms. */
export const BLOCKING_SOCKET_TIMEOUT_MS = 30_000;

/** What createRedis reads of the config; without `redisSentinel`, no Sentinel. */
export type RedisConnectionConfig = Pick<SluiceConfig, 'redisUrl' | 'redisClusterNodes'> & Partial<Pick<SluiceConfig, 'redisSentinel'>>;

/**
 * After a failover a connection can still be open to the old master, now a
 * replica (demoted while the connection stayed up, or reached again by an
 * address that has not moved yet, as a DNS name behind a managed Redis): every
 * write then fails with READONLY, and would for good (bull #1947). Such an
 * error reconnects (in Sentinel mode to the master the Sentinels name) and
 * sends the command again (2). A replica refuses a write, a script's too,
 * before changing anything, so sending it again cannot apply it twice.
 * UNBLOCKED is what a node answers a blocked BLPOP when it turns replica: the
 * BLPOP is sent again the same way.
 */
export function reconnectOnReadonly(err: Error): 2 | false {
  return err.message.startsWith('READONLY') || err.message.startsWith('UNBLOCKED') ? 2 : false;
}

/**
 * Creates a Redis connection from the config: ioredis Cluster when
 * REDIS_CLUSTER_NODES is set, the master the Sentinels name when
 * REDIS_SENTINELS is set (followed through failovers), else a single node
 * from REDIS_URL. Every connection Sluice opens is made here.
 * Auto-pipelining batches the commands issued in one event-loop tick into one
 * write, which is what lets many in-flight enqueues share round trips.
 * On a single node the enqueue script is the exception (UNPIPELINED): it
 * does its own group commit (RedisJobStore.enqueue) and must reach the socket
 * at once, so that Redis runs one chunk of jobs while Node prepares the next;
 * auto-pipelined, every chunk of a tick would travel in one write and Node
 * and Redis would take turns instead of working at the same time.
 * @param opts.blocking for connections that issue BLPOP: no auto-pipelining
 *   (a blocked pipeline would hold up other commands).
 */
export function createRedis(config: RedisConnectionConfig, opts: { blocking?: boolean; name?: string } = {}): RedisClient {
  const common: RedisOptions = {
    connectionName: opts.name,
    // Keep retrying forever with a capped delay: workers stop claiming while
    // disconnected and go on when Redis is back.
    retryStrategy: (times) => Math.min(50 * times, 1000),
    maxRetriesPerRequest: opts.blocking ? null : 20,
    enableAutoPipelining: !opts.blocking,
    // A node that stops answering without closing the connection (a frozen
    // or partitioned master: its Sentinels fail it over, but its sockets stay
    // open) is left after this long without a byte back, and the connection
    // reconnects — to the new master, with Sentinel. Blocking connections
    // wait in BLPOP for up to 5 s by design: they get more room.
    socketTimeout: opts.blocking ? BLOCKING_SOCKET_TIMEOUT_MS : SOCKET_TIMEOUT_MS,
  };
  let client: RedisClient;
  if (config.redisClusterNodes) {
    client = new Cluster(config.redisClusterNodes, {
      redisOptions: common,
      enableAutoPipelining: !opts.blocking,
      clusterRetryStrategy: (times) => Math.min(100 * times, 2000),
    });
  } else {
    const node: RedisOptions = { ...common, autoPipeliningIgnoredCommands: UNPIPELINED, reconnectOnError: reconnectOnReadonly };
    client = config.redisSentinel ? new Redis({ ...sentinelOptions(config.redisSentinel), ...node }) : new Redis(config.redisUrl, node);
  }
  // Connection errors surface as rejected commands and 'close' events, which
  // the callers handle (the worker logs "pausing claims" once); without a
  // listener ioredis would print every reconnect attempt to stderr.
  client.on('error', () => undefined);
  return client;
}

/**
 * ioredis' Sentinel mode. It asks the Sentinels in turn for the master, and
 * once connected checks the node's role (a node that is not the master is
 * left and asked for again); a connection that closes (the master died, or
 * a Sentinel demoting it killed its clients) asks again and resends what was
 * unanswered, and READONLY does the same (reconnectOnReadonly).
 * `failoverDetector` stays off: in ioredis 5.11 its `+switch-master` handler
 * can stop a client that is reconnecting at that moment for good (status
 * `end`, every command "Connection is closed"): 32 of 60 clients in one of
 * two runs of a master SIGKILL, none without it. A master that freezes
 * without closing its connections is left by the socket timeout instead
 * (SOCKET_TIMEOUT_MS).
 */
function sentinelOptions(s: RedisSentinelConfig): RedisOptions {
  return {
    sentinels: s.sentinels,
    name: s.name,
    ...(s.password !== null ? { sentinelPassword: s.password } : {}),
    ...(s.node.username !== undefined ? { username: s.node.username } : {}),
    ...(s.node.password !== undefined ? { password: s.node.password } : {}),
    db: s.node.db,
    // rediss: TLS to the data nodes (the Sentinels are spoken to in plain TCP).
    ...(s.node.tls ? { tls: {}, enableTLSForSentinelMode: true } : {}),
    role: 'master',
    failoverDetector: false,
    // Every Sentinel unreachable: ask them all again, at most every second.
    sentinelRetryStrategy: (times) => Math.min(100 * times, 1000),
    // A Sentinel that accepts the connection but does not answer is skipped after 2 s.
    sentinelCommandTimeout: 2000,
  };
}

/** Where the config says Redis is, for error messages: no password, neither the data nodes' nor the Sentinels'. */
export function describeRedis(config: RedisConnectionConfig): string {
  const list = (nodes: { host: string; port: number }[]) => nodes.map((n) => `${n.host}:${n.port}`).join(',');
  if (config.redisClusterNodes) return `REDIS_CLUSTER_NODES=${list(config.redisClusterNodes)}`;
  if (config.redisSentinel) return `REDIS_SENTINELS=${list(config.redisSentinel.sentinels)}, master "${config.redisSentinel.name}"`;
  try {
    const u = new URL(config.redisUrl);
    if (u.password) u.password = '***';
    return `REDIS_URL=${u.toString()}`;
  } catch {
    return 'REDIS_URL';
  }
}

/** The master nodes of a cluster, or the client itself. */
export function masters(client: RedisClient): Redis[] {
  return client instanceof Cluster ? client.nodes('master') : [client];
}

/**
 * Like {@link masters}, but first waits until a cluster client has read the
 * slot map: before that `nodes('master')` is empty (right after construction).
 * @throws Error when the cluster client ends before it is ready, or knows no master.
 */
export async function readyMasters(client: RedisClient): Promise<Redis[]> {
  if (client instanceof Cluster && client.status !== 'ready') {
    await new Promise<void>((resolve, reject) => {
      const onReady = () => {
        client.off('end', onEnd);
        resolve();
      };
      const onEnd = () => {
        client.off('ready', onReady);
        reject(new Error('redis cluster connection ended before it was ready'));
      };
      client.once('ready', onReady);
      client.once('end', onEnd);
    });
  }
  const nodes = masters(client);
  if (nodes.length === 0) throw new Error('redis cluster: no master node known');
  return nodes;
}
