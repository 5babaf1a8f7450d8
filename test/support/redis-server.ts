import { ChildProcess, execFile, spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Redis from 'ioredis';
import { entryFields } from '../../src/mirror/projection';

/**
 * Private redis-server processes for integration tests that need to stop,
 * kill or restart Redis, or run a Redis Cluster: each one on a spare port,
 * with its own directory, started in the foreground as a child process.
 * Everything started here is killed by `stopAllRedisServers()` (call it in
 * afterAll) and, as a last resort, when the test process exits.
 */

const started = new Set<RedisServer>();
process.on('exit', () => {
  for (const s of started) s.proc?.kill('SIGKILL');
});

/** A fresh temporary directory (removed by `removeDir`). */
export function makeTmpDir(name: string): string {
  return mkdtempSync(join(tmpdir(), `sluice-${name}-`));
}

export function removeDir(dir: string | undefined): void {
  if (dir) rmSync(dir, { recursive: true, force: true });
}

function portFree(port: number): Promise<boolean> {
  return new Promise((res) => {
    const srv = createServer();
    srv.once('error', () => res(false));
    srv.listen(port, '127.0.0.1', () => srv.close(() => res(true)));
  });
}

/**
 * `count` consecutive free ports starting at `preferred` when they are free,
 * else at a random base. With `clusterBus`, port+10000 must be free too.
 */
export async function sparePorts(
  count: number,
  preferred?: number,
  clusterBus = false,
): Promise<number[]> {
  const fits = async (base: number) => {
    for (let p = base; p < base + count; p++) {
      if (!(await portFree(p))) return false;
      if (clusterBus && !(await portFree(p + 10000))) return false;
    }
    return true;
  };
  if (preferred !== undefined && (await fits(preferred)))
    return Array.from({ length: count }, (_, i) => preferred + i);
  for (let tries = 0; tries < 200; tries++) {
    const base = 20000 + Math.floor(Math.random() * (clusterBus ? 25000 : 40000));
    if (await fits(base)) return Array.from({ length: count }, (_, i) => base + i);
  }
  throw new Error('no spare ports found');
}

export interface RedisServerOptions {
  port: number;
  /** Working directory (AOF/RDB/cluster config live here). */
  dir: string;
  appendonly?: boolean;
  appendfsync?: 'always' | 'everysec' | 'no';
  cluster?: boolean;
  /** Run as a Sentinel (`redis-server <file> --sentinel`) with this config file, which it rewrites. */
  sentinelConfig?: string;
  /** cluster-node-timeout, ms (default 5000): how long a silent node takes to be marked failed. */
  clusterNodeTimeoutMs?: number;
  extraArgs?: string[];
}

/** One private redis-server. `start()` again after a stop restarts it on the same port and dir. */
export class RedisServer {
  proc: ChildProcess | null = null;
  private out = '';
  private exitedP: Promise<void> = Promise.resolve();

  constructor(readonly opts: RedisServerOptions) {
    mkdirSync(opts.dir, { recursive: true });
  }

  get port(): number {
    return this.opts.port;
  }

  get url(): string {
    return `redis://127.0.0.1:${this.opts.port}`;
  }

  get running(): boolean {
    return !!this.proc && this.proc.exitCode === null && this.proc.signalCode === null;
  }

  /** Everything the server logged (all runs). */
  output(): string {
    return this.out;
  }

  private args(): string[] {
    const o = this.opts;
    if (o.sentinelConfig) {
      // prettier-ignore
      return [o.sentinelConfig, '--sentinel', '--port', String(o.port), '--bind', '127.0.0.1', '--dir', o.dir,
        '--daemonize', 'no', '--logfile', '', '--protected-mode', 'no', ...(o.extraArgs ?? [])];
    }
    // prettier-ignore
    const args = [
      '--port', String(o.port), '--bind', '127.0.0.1', '--dir', o.dir, '--daemonize', 'no',
      '--save', '', '--logfile', '', '--protected-mode', 'no', '--appendonly', o.appendonly ? 'yes' : 'no',
    ];
    if (o.appendonly) args.push('--appendfsync', o.appendfsync ?? 'always');
    if (o.cluster) {
      // prettier-ignore
      args.push('--cluster-enabled', 'yes', '--cluster-config-file', join(o.dir, 'nodes.conf'), '--cluster-node-timeout', String(o.clusterNodeTimeoutMs ?? 5000));
    }
    return args.concat(o.extraArgs ?? []);
  }

  /** Starts the server and resolves once it accepts connections (after loading its AOF). */
  async start(timeoutMs = 15000): Promise<void> {
    if (this.running) throw new Error(`redis-server on ${this.port} already runs`);
    const proc = spawn('redis-server', this.args(), { stdio: ['ignore', 'pipe', 'pipe'] });
    this.proc = proc;
    started.add(this);
    const mark = this.out.length;
    const listeners = new Set<() => void>();
    const onData = (d: Buffer) => {
      this.out += d.toString();
      for (const l of [...listeners]) l();
    };
    proc.stdout!.on('data', onData);
    proc.stderr!.on('data', onData);
    this.exitedP = new Promise((res) =>
      proc.on('exit', () => {
        for (const l of [...listeners]) l();
        res();
      }),
    );
    await new Promise<void>((res, rej) => {
      const t = setTimeout(
        () =>
          done(
            new Error(
              `redis-server on ${this.port} not ready after ${timeoutMs} ms: ${this.out.slice(mark).slice(-2000)}`,
            ),
          ),
        timeoutMs,
      );
      const done = (err?: Error) => {
        clearTimeout(t);
        listeners.delete(check);
        if (err) rej(err);
        else res();
      };
      const check = () => {
        // A Sentinel never says it is ready: it is once it monitors its master.
        const ready = this.opts.sentinelConfig ? '+monitor master' : 'Ready to accept connections';
        if (this.out.slice(mark).includes(ready)) done();
        else if (proc.exitCode !== null || proc.signalCode !== null)
          done(
            new Error(`redis-server on ${this.port} exited: ${this.out.slice(mark).slice(-2000)}`),
          );
      };
      listeners.add(check);
      check();
    });
  }

  /** Sends `signal` (SIGTERM = graceful shutdown, AOF flushed) and waits for the exit. */
  async stop(signal: NodeJS.Signals = 'SIGTERM'): Promise<void> {
    if (!this.running) return;
    this.proc!.kill(signal);
    await this.exitedP;
  }

  /** SIGKILL: no shutdown at all, connections drop. */
  kill(): Promise<void> {
    return this.stop('SIGKILL');
  }

  /** A plain client on this server that does not retry (for probes and admin commands). */
  client(): Redis {
    return new Redis(this.url, {
      retryStrategy: () => null,
      maxRetriesPerRequest: 0,
      lazyConnect: false,
    });
  }
}

/** Starts one private redis-server. */
export async function startRedisServer(
  opts: Partial<RedisServerOptions> & { name?: string } = {},
): Promise<RedisServer> {
  const port = opts.port ?? (await sparePorts(1))[0];
  const dir = opts.dir ?? makeTmpDir(opts.name ?? `redis-${port}`);
  const s = new RedisServer({ ...opts, port, dir });
  await s.start();
  return s;
}

export interface RedisClusterHandle {
  servers: RedisServer[];
  /** host:port of each master, for REDIS_CLUSTER_NODES. */
  nodes: { host: string; port: number }[];
  nodesEnv: string;
  /** Every node, replicas included, as REDIS_CLUSTER_NODES (the masters first). */
  allNodesEnv: string;
  /** Each master with its replicas, as the cluster set them up. */
  shards: { master: RedisServer; replicas: RedisServer[] }[];
  dir: string;
}

export interface RedisClusterOptions {
  /** Replicas per master (`--cluster-replicas`); default 0. */
  replicas?: number;
  /** cluster-node-timeout of every node, ms (default 5000); a failover takes about twice this. */
  nodeTimeoutMs?: number;
}

function run(cmd: string, args: string[], timeoutMs = 30000): Promise<string> {
  return new Promise((res, rej) =>
    execFile(cmd, args, { timeout: timeoutMs }, (err, stdout, stderr) =>
      err
        ? rej(new Error(`${cmd} ${args.join(' ')} failed: ${err.message}\n${stdout}\n${stderr}`))
        : res(stdout),
    ),
  );
}

/** One line of CLUSTER NODES. */
export interface ClusterNodeLine {
  id: string;
  port: number;
  flags: string[];
  /** Node id of its master, for a replica; '-' for a master. */
  masterId: string;
  /** `connected` or `disconnected`. */
  link: string;
  /** The slot ranges it serves, as written (`0-5460`). */
  slots: string[];
}

/** CLUSTER NODES as seen by the node `client` talks to. */
export async function clusterNodes(client: Redis): Promise<ClusterNodeLine[]> {
  const text = (await client.cluster('NODES')) as string;
  return text
    .trim()
    .split('\n')
    .map((line) => {
      const f = line.split(' ');
      return {
        id: f[0],
        port: Number(/:(\d+)@/.exec(f[1])![1]),
        flags: f[2].split(','),
        masterId: f[3],
        link: f[7],
        slots: f.slice(8),
      };
    });
}

/** A node's INFO section as key → value. */
export async function infoFields(client: Redis, section: string): Promise<Record<string, string>> {
  const out: Record<string, string> = {};
  for (const line of ((await client.info(section)) as string).split('\r\n')) {
    const i = line.indexOf(':');
    if (i > 0) out[line.slice(0, i)] = line.slice(i + 1);
  }
  return out;
}

/**
 * Starts `masters` cluster-enabled servers (ports `preferredPort`.. when free),
 * each with `opts.replicas` replicas, joins them with `redis-cli --cluster
 * create` and waits until every node reports cluster_state:ok, knows every
 * node, agrees on who is master and who replicates whom (no node flagged
 * fail), and each replica's link to its master is up.
 */
export async function startRedisCluster(
  masters = 3,
  preferredPort = 7101,
  opts: RedisClusterOptions = {},
): Promise<RedisClusterHandle> {
  const replicas = opts.replicas ?? 0;
  const total = masters * (1 + replicas);
  const ports = await sparePorts(total, preferredPort, true);
  const dir = makeTmpDir('cluster');
  const servers = ports.map(
    (port) =>
      new RedisServer({
        port,
        dir: join(dir, String(port)),
        cluster: true,
        clusterNodeTimeoutMs: opts.nodeTimeoutMs,
      }),
  );
  await Promise.all(servers.map((s) => s.start()));
  await run('redis-cli', [
    '--cluster',
    'create',
    ...ports.map((p) => `127.0.0.1:${p}`),
    '--cluster-replicas',
    String(replicas),
    '--cluster-yes',
  ]);
  const clients = servers.map((s) => s.client());
  let views: ClusterNodeLine[][] = [];
  try {
    const deadline = Date.now() + 30000;
    for (;;) {
      const infos = await Promise.all(clients.map((c) => c.cluster('INFO') as Promise<string>));
      views = await Promise.all(clients.map((c) => clusterNodes(c)));
      const repl = await Promise.all(clients.map((c) => infoFields(c, 'replication')));
      // Every node: the same masters, each replica under the same master, nobody failing.
      const shape = (v: ClusterNodeLine[]) =>
        v
          .map((n) => `${n.port}:${n.flags.includes('master') ? 'M' : `S<${n.masterId}`}`)
          .sort()
          .join(' ');
      const ok =
        infos.every(
          (i) =>
            /cluster_state:ok/.test(i) &&
            /cluster_slots_ok:16384/.test(i) &&
            new RegExp(`cluster_known_nodes:${total}\\b`).test(i) &&
            new RegExp(`cluster_size:${masters}\\b`).test(i),
        ) &&
        views.every((v) => shape(v) === shape(views[0])) &&
        views.every((v) =>
          v.every((n) => !n.flags.some((f) => /fail|handshake|noaddr/.test(f)) && n.link === 'connected'),
        ) &&
        views[0].filter((n) => n.flags.includes('master')).length === masters &&
        repl.every((r) =>
          r.role === 'master'
            ? Number(r.connected_slaves) === replicas &&
              Array.from({ length: replicas }, (_, i) => r[`slave${i}`]).every((s) =>
                /state=online/.test(s ?? ''),
              )
            : r.master_link_status === 'up' && r.master_sync_in_progress === '0',
        );
      if (ok) break;
      if (Date.now() > deadline)
        throw new Error(
          `cluster not ok: ${infos.join('\n---\n')}\n${views.map((v) => JSON.stringify(v)).join('\n')}`,
        );
      await sleepMs(100);
    }
  } finally {
    clients.forEach((c) => c.disconnect());
  }
  const byPort = new Map(servers.map((s) => [s.port, s]));
  const view = views[0];
  const shards = view
    .filter((n) => n.flags.includes('master'))
    .map((m) => ({
      master: byPort.get(m.port)!,
      replicas: view.filter((r) => r.masterId === m.id).map((r) => byPort.get(r.port)!),
    }))
    .sort((a, b) => a.master.port - b.master.port);
  const nodes = shards.map((s) => ({ host: '127.0.0.1', port: s.master.port }));
  const env = (ps: number[]) => ps.map((p) => `127.0.0.1:${p}`).join(',');
  const masterPorts = nodes.map((n) => n.port);
  return {
    servers,
    nodes,
    nodesEnv: env(masterPorts),
    allNodesEnv: env([...masterPorts, ...ports.filter((p) => !masterPorts.includes(p))]),
    shards,
    dir,
  };
}

/** Kills (SIGKILL) every server started through this module and waits for the exits. */
export async function stopAllRedisServers(): Promise<void> {
  await Promise.all([...started].map((s) => s.kill()));
  started.clear();
}

// ---- shared checks for the tests that stop, kill or restart Redis ---------

export const sleepMs = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Polls `pred` every `everyMs` until it is true; throws naming `what` after `timeoutMs`. */
export async function waitUntil(
  what: string,
  pred: () => Promise<boolean> | boolean,
  timeoutMs: number,
  everyMs = 100,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await pred())) {
    if (Date.now() > deadline)
      throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await sleepMs(everyMs);
  }
}

/** One job's audit trail, summarized from its queue's events stream. */
export interface JobTrail {
  /** Event names in stream order. */
  events: string[];
  count: Record<string, number>;
  /** executionSeq of each claimed event. */
  claimedSeqs: number[];
  /** Redis-clock times (ms) of the first enqueued and first claimed events. */
  enqueuedAt?: number;
  claimedAt?: number;
}

/** Reads a queue's events stream (XRANGE in pages) into one trail per job id. */
export async function auditTrails(
  redis: {
    xrange(
      key: string,
      start: string,
      end: string,
      count: 'COUNT',
      n: number,
    ): Promise<[string, string[]][]>;
  },
  eventsKey: string,
): Promise<Map<string, JobTrail>> {
  const out = new Map<string, JobTrail>();
  let start = '-';
  for (;;) {
    const page = await redis.xrange(eventsKey, start, '+', 'COUNT', 5000);
    for (const [, fields] of page) {
      const e = entryFields(fields);
      let t = out.get(e.j);
      if (!t) out.set(e.j, (t = { events: [], count: {}, claimedSeqs: [] }));
      t.events.push(e.e);
      t.count[e.e] = (t.count[e.e] ?? 0) + 1;
      if (e.e === 'enqueued' && t.enqueuedAt === undefined) t.enqueuedAt = Number(e.at);
      if (e.e === 'claimed') {
        t.claimedSeqs.push(Number(e.x));
        if (t.claimedAt === undefined) t.claimedAt = Number(e.at);
      }
    }
    if (page.length < 5000) break;
    start = '(' + page[page.length - 1][0];
  }
  return out;
}

/**
 * The at-least-once contract after a Redis outage: every job ends completed
 * exactly once, and a job that was claimed more than once was put back in
 * between, by the reaper (`stalled`: its lease expired) or by the worker
 * that held it (`released`: given back unrun, e.g. a claim that answered
 * after the worker had filled its slots): one such event per extra claim.
 * Returns the problems found (empty when the contract holds) and a summary.
 */
export function checkRunsOnce(
  ids: string[],
  trails: Map<string, JobTrail>,
): { problems: string[]; reruns: number; stalled: number; released: number; rerun: string[] } {
  const problems: string[] = [];
  const rerun: string[] = [];
  let reruns = 0;
  let stalled = 0;
  let released = 0;
  for (const id of ids) {
    const t = trails.get(id);
    if (!t) {
      problems.push(`${id}: no events at all`);
      continue;
    }
    const c = (e: string) => t.count[e] ?? 0;
    stalled += c('stalled');
    released += c('released');
    if (c('claimed') > 1) {
      reruns++;
      if (rerun.length < 5) rerun.push(`${id}: ${t.events.join(',')}`);
    }
    if (c('enqueued') !== 1) problems.push(`${id}: ${c('enqueued')} enqueued events`);
    if (c('completed') !== 1)
      problems.push(`${id}: ${c('completed')} completed events (${t.events.join(',')})`);
    if (c('claimed') < 1) problems.push(`${id}: never claimed (${t.events.join(',')})`);
    if (c('claimed') - 1 !== c('stalled') + c('released'))
      problems.push(
        `${id}: claimed ${c('claimed')} times with ${c('stalled')} stalled and ${c('released')} released events (${t.events.join(',')})`,
      );
    const seqs = t.claimedSeqs.join(',');
    const expected = t.claimedSeqs.map((_, i) => i + 1).join(',');
    if (seqs !== expected)
      problems.push(`${id}: executionSeq of the claims ${seqs}, expected ${expected}`);
    if (t.events[t.events.length - 1] !== 'completed')
      problems.push(`${id}: last event ${t.events[t.events.length - 1]}`);
  }
  return { problems, reruns, stalled, released, rerun };
}
