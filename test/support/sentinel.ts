import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import Redis from 'ioredis';
import { makeTmpDir, RedisServer, sparePorts, waitUntil } from './redis-server';

/**
 * A Redis Sentinel deployment of private processes (test/support/redis-server.ts):
 * one master, one replica (`--replicaof`) and `sentinels` Sentinels, each in a
 * directory of its own (a Sentinel rewrites its config file). Everything is
 * killed by `stopAllRedisServers()`.
 */
export interface SentinelSet {
  /** The master at start (after a failover, a dead or demoted node). */
  master: RedisServer;
  replica: RedisServer;
  sentinels: RedisServer[];
  /** The master's name in the Sentinels. */
  name: string;
  /** `host:port,...` of the Sentinels, for REDIS_SENTINELS. */
  sentinelsEnv: string;
  /** The data nodes' password (requirepass, masterauth); the Sentinels' own is `sentinelPassword`. */
  password?: string;
  sentinelPassword?: string;
  dir: string;
  /** The data node on `port` (master or replica). */
  node(port: number): RedisServer;
  /** A client on a data node (reconnects, a few retries per command). */
  nodeClient(server: RedisServer, db?: number): Redis;
  /** The master's port as the first Sentinel that answers names it. */
  masterPort(): Promise<number>;
  /** Waits until every running Sentinel names `port` as the master. */
  waitForMaster(port: number, timeoutMs: number): Promise<void>;
}

export interface SentinelSetOptions {
  name?: string;
  sentinels?: number;
  quorum?: number;
  /** `down-after-milliseconds`: how long a node must not answer before it is thought down. */
  downAfterMs?: number;
  /** `failover-timeout`. */
  failoverTimeoutMs?: number;
  /** requirepass and masterauth of the data nodes (and the Sentinels' auth-pass). */
  password?: string;
  /** requirepass of the Sentinels (and sentinel-pass, to reach one another). */
  sentinelPassword?: string;
}

const adminClient = (port: number, password?: string, db = 0) =>
  new Redis({ host: '127.0.0.1', port, password, db, retryStrategy: () => null, maxRetriesPerRequest: 0 });

/** Runs `fn` on a short-lived admin client, always disconnected after. */
async function withClient<T>(port: number, password: string | undefined, fn: (r: Redis) => Promise<T>): Promise<T> {
  const r = adminClient(port, password);
  r.on('error', () => undefined);
  try {
    return await fn(r);
  } finally {
    r.disconnect();
  }
}

/**
 * Starts the master and the replica, waits for the replica's link, then the
 * Sentinels, and waits until each one knows the replica and the other
 * Sentinels (a failover needs a majority of them to elect a leader).
 */
export async function startSentinelSet(opts: SentinelSetOptions = {}): Promise<SentinelSet> {
  const name = opts.name ?? 'mymaster';
  const count = opts.sentinels ?? 3;
  const quorum = opts.quorum ?? 2;
  const { password, sentinelPassword } = opts;
  const [masterPort, replicaPort, ...sentinelPorts] = await sparePorts(2 + count);
  const dir = makeTmpDir('sentinel');
  // No 5 s wait before a full sync (Redis 7's default): a replica links up at once.
  const auth = ['--repl-diskless-sync-delay', '0', ...(password ? ['--requirepass', password, '--masterauth', password] : [])];
  const master = new RedisServer({ port: masterPort, dir: join(dir, String(masterPort)), extraArgs: auth });
  // prettier-ignore
  const replica = new RedisServer({ port: replicaPort, dir: join(dir, String(replicaPort)), extraArgs: [...auth, '--replicaof', '127.0.0.1', String(masterPort)] });
  await master.start();
  await replica.start();
  await waitUntil(
    'the replica linked to the master',
    () => withClient(replicaPort, password, async (r) => /master_link_status:up/.test(await r.info('replication'))),
    20_000,
  );

  const sentinels = sentinelPorts.map((port) => {
    const sdir = join(dir, `sentinel-${port}`);
    const s = new RedisServer({ port, dir: sdir, sentinelConfig: join(sdir, 'sentinel.conf') });
    const lines = [
      `sentinel monitor ${name} 127.0.0.1 ${masterPort} ${quorum}`,
      `sentinel down-after-milliseconds ${name} ${opts.downAfterMs ?? 1000}`,
      `sentinel failover-timeout ${name} ${opts.failoverTimeoutMs ?? 5000}`,
      `sentinel parallel-syncs ${name} 1`,
    ];
    if (password) lines.push(`sentinel auth-pass ${name} ${password}`);
    if (sentinelPassword) lines.push(`requirepass ${sentinelPassword}`, `sentinel sentinel-pass ${sentinelPassword}`);
    writeFileSync(s.opts.sentinelConfig!, lines.join('\n') + '\n');
    return s;
  });
  await Promise.all(sentinels.map((s) => s.start()));
  await waitUntil(
    'every Sentinel knows the replica and the other Sentinels',
    async () => {
      const views = await Promise.all(
        sentinels.map((s) =>
          withClient(s.port, sentinelPassword, async (r) => {
            const flat = (await r.call('SENTINEL', 'MASTER', name)) as string[];
            const m = new Map<string, string>();
            for (let i = 0; i + 1 < flat.length; i += 2) m.set(flat[i], flat[i + 1]);
            return m;
          }).catch(() => null),
        ),
      );
      return views.every((m) => m !== null && m.get('num-slaves') === '1' && m.get('num-other-sentinels') === String(count - 1) && m.get('flags') === 'master');
    },
    30_000,
    200,
  );

  const nodes = new Map([master, replica].map((s) => [s.port, s]));
  const masterPortNow = async (): Promise<number> => {
    for (const s of sentinels) {
      if (!s.running) continue;
      const addr = await withClient(s.port, sentinelPassword, (r) => r.call('SENTINEL', 'GET-MASTER-ADDR-BY-NAME', name) as Promise<string[] | null>).catch(() => null);
      if (addr) return Number(addr[1]);
    }
    throw new Error('no Sentinel answered');
  };
  return {
    master,
    replica,
    sentinels,
    name,
    sentinelsEnv: sentinels.map((s) => `127.0.0.1:${s.port}`).join(','),
    password,
    sentinelPassword,
    dir,
    node: (port) => {
      const n = nodes.get(port);
      if (!n) throw new Error(`no data node on port ${port}`);
      return n;
    },
    nodeClient: (server, db = 0) => {
      // Reconnects: a failover kills the clients of the nodes it reconfigures (CLIENT KILL TYPE normal).
      const r = new Redis({ host: '127.0.0.1', port: server.port, password, db, retryStrategy: (n) => Math.min(50 * n, 500), maxRetriesPerRequest: 3 });
      r.on('error', () => undefined);
      return r;
    },
    masterPort: masterPortNow,
    waitForMaster: (port, timeoutMs) =>
      waitUntil(
        `every Sentinel naming 127.0.0.1:${port} the master of ${name}`,
        async () => {
          const answers = await Promise.all(
            sentinels
              .filter((s) => s.running)
              .map((s) =>
                withClient(s.port, sentinelPassword, (r) => r.call('SENTINEL', 'GET-MASTER-ADDR-BY-NAME', name) as Promise<string[] | null>).catch(() => null),
              ),
          );
          return answers.every((a) => a !== null && Number(a[1]) === port);
        },
        timeoutMs,
        100,
      ),
  };
}
