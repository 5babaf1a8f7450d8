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
      args.push('--cluster-enabled', 'yes', '--cluster-config-file', join(o.dir, 'nodes.conf'), '--cluster-node-timeout', '5000');
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
  dir: string;
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

/**
 * Starts `masters` cluster-enabled servers (ports `preferredPort`.. when free),
 * joins them with `redis-cli --cluster create` (no replicas) and waits until
 * every node reports cluster_state:ok and agrees on the slot map.
 */
export async function startRedisCluster(
  masters = 3,
  preferredPort = 7101,
): Promise<RedisClusterHandle> {
  const ports = await sparePorts(masters, preferredPort, true);
  const dir = makeTmpDir('cluster');
  const servers = ports.map(
    (port) => new RedisServer({ port, dir: join(dir, String(port)), cluster: true }),
  );
  await Promise.all(servers.map((s) => s.start()));
  await run('redis-cli', [
    '--cluster',
    'create',
    ...ports.map((p) => `127.0.0.1:${p}`),
    '--cluster-replicas',
    '0',
    '--cluster-yes',
  ]);
  const clients = servers.map((s) => s.client());
  try {
    const deadline = Date.now() + 20000;
    for (;;) {
      const infos = await Promise.all(clients.map((c) => c.cluster('INFO') as Promise<string>));
      const ok = infos.every(
        (i) =>
          /cluster_state:ok/.test(i) &&
          /cluster_slots_ok:16384/.test(i) &&
          new RegExp(`cluster_known_nodes:${masters}\\b`).test(i),
      );
      if (ok) break;
      if (Date.now() > deadline) throw new Error(`cluster not ok: ${infos.join('\n---\n')}`);
      await new Promise((r) => setTimeout(r, 100));
    }
  } finally {
    clients.forEach((c) => c.disconnect());
  }
  const nodes = ports.map((port) => ({ host: '127.0.0.1', port }));
  return { servers, nodes, nodesEnv: nodes.map((n) => `${n.host}:${n.port}`).join(','), dir };
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
 * exactly once, and a job that ran more than once (several claimed events)
 * was put back by the reaper in between: one `stalled` event per extra run.
 * Returns the problems found (empty when the contract holds) and a summary.
 */
export function checkRunsOnce(
  ids: string[],
  trails: Map<string, JobTrail>,
): { problems: string[]; reruns: number; stalled: number; rerun: string[] } {
  const problems: string[] = [];
  const rerun: string[] = [];
  let reruns = 0;
  let stalled = 0;
  for (const id of ids) {
    const t = trails.get(id);
    if (!t) {
      problems.push(`${id}: no events at all`);
      continue;
    }
    const c = (e: string) => t.count[e] ?? 0;
    stalled += c('stalled');
    if (c('claimed') > 1) {
      reruns++;
      if (rerun.length < 5) rerun.push(`${id}: ${t.events.join(',')}`);
    }
    if (c('enqueued') !== 1) problems.push(`${id}: ${c('enqueued')} enqueued events`);
    if (c('completed') !== 1)
      problems.push(`${id}: ${c('completed')} completed events (${t.events.join(',')})`);
    if (c('claimed') < 1) problems.push(`${id}: never claimed (${t.events.join(',')})`);
    if (c('claimed') - 1 !== c('stalled'))
      problems.push(
        `${id}: ran ${c('claimed')} times with ${c('stalled')} stalled events (${t.events.join(',')})`,
      );
    const seqs = t.claimedSeqs.join(',');
    const expected = t.claimedSeqs.map((_, i) => i + 1).join(',');
    if (seqs !== expected)
      problems.push(`${id}: executionSeq of the claims ${seqs}, expected ${expected}`);
    if (t.events[t.events.length - 1] !== 'completed')
      problems.push(`${id}: last event ${t.events[t.events.length - 1]}`);
  }
  return { problems, reruns, stalled, rerun };
}
