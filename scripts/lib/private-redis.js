/*
 * Private redis-server processes for scripts that stop, kill and fail Redis
 * over (the soak): data nodes with AOF, and sentinels (`redis-server
 * --sentinel <conf>`: there is no redis-sentinel binary here). Each one runs
 * in the foreground as a child process on a port of its own, with a folder
 * of its own; its output goes to `<dir>/redis.log`. The shared Redis on 6379
 * is never touched. Everything started here is killed (SIGKILL) when the
 * process exits, as a last resort; call kill()/stop() yourself first.
 */
const { spawn } = require('node:child_process');
const { appendFileSync, mkdirSync, writeFileSync } = require('node:fs');
const { join } = require('node:path');
const Redis = require('ioredis');

const started = new Set();
process.on('exit', () => {
  for (const s of started) {
    try {
      s.proc?.kill('SIGKILL');
    } catch {
      /* gone */
    }
  }
});

/** A client that never retries: for probes and admin commands. Call .disconnect(). */
function probeClient(port, host = '127.0.0.1') {
  const c = new Redis({ host, port, retryStrategy: () => null, maxRetriesPerRequest: 0, connectTimeout: 2000, commandTimeout: 5000, lazyConnect: true, enableOfflineQueue: false });
  c.on('error', () => undefined);
  return c;
}

/** Runs `fn(client)` on a fresh probe client, always disconnecting; rejects on any error. */
async function withClient(port, fn) {
  const c = probeClient(port);
  try {
    await c.connect();
    return await fn(c);
  } finally {
    c.disconnect();
  }
}

class RedisProcess {
  /**
   * @param {{name: string, port: number, dir: string}} opts
   */
  constructor({ name, port, dir }) {
    this.name = name;
    this.port = port;
    this.dir = dir;
    this.proc = null;
    this.out = '';
    this.exited = Promise.resolve();
    this.logFile = join(dir, 'redis.log');
    mkdirSync(dir, { recursive: true });
  }

  get running() {
    return !!this.proc && this.proc.exitCode === null && this.proc.signalCode === null;
  }

  /** Writes the config file and returns the argv for redis-server. */
  argv() {
    throw new Error('abstract');
  }

  /** Starts the process; resolves once it logs "Ready to accept connections" (after loading its AOF). */
  async start(timeoutMs = 30000) {
    if (this.running) throw new Error(`${this.name} (port ${this.port}) already runs`);
    const proc = spawn('redis-server', this.argv(), { stdio: ['ignore', 'pipe', 'pipe'] });
    this.proc = proc;
    started.add(this);
    let mark = '';
    const listeners = new Set();
    const onData = (d) => {
      const s = d.toString();
      mark += s;
      if (mark.length > 100000) mark = mark.slice(-50000);
      try {
        appendFileSync(this.logFile, s);
      } catch {
        /* folder removed at the end */
      }
      for (const l of [...listeners]) l();
    };
    proc.stdout.on('data', onData);
    proc.stderr.on('data', onData);
    this.exited = new Promise((resolve) =>
      proc.on('exit', () => {
        for (const l of [...listeners]) l();
        resolve();
      }),
    );
    await new Promise((resolve, reject) => {
      const done = (err) => {
        clearTimeout(t);
        listeners.delete(check);
        if (err) reject(err);
        else resolve();
      };
      const t = setTimeout(() => done(new Error(`${this.name} on ${this.port} not ready after ${timeoutMs} ms: ${mark.slice(-2000)}`)), timeoutMs);
      const check = () => {
        if (/Ready to accept connections|Sentinel ID is/.test(mark)) done();
        else if (proc.exitCode !== null || proc.signalCode !== null) done(new Error(`${this.name} on ${this.port} exited: ${mark.slice(-2000)}`));
      };
      listeners.add(check);
      check();
    });
  }

  /** Sends `signal` (SIGTERM = graceful shutdown: AOF flushed, replicas waited for) and waits for the exit. */
  async stop(signal = 'SIGTERM', timeoutMs = 30000) {
    if (!this.running) return;
    this.proc.kill(signal);
    const t = setTimeout(() => this.proc?.kill('SIGKILL'), timeoutMs);
    await this.exited;
    clearTimeout(t);
  }

  /** SIGKILL: no shutdown at all, connections drop. */
  kill() {
    return this.stop('SIGKILL');
  }
}

/**
 * A data node: AOF on (appendfsync as given), no RDB snapshots, optionally a
 * replica of another node. The config file is written anew at each start,
 * so a restart decides the node's role (sentinel may rewrite it meanwhile).
 */
class RedisNode extends RedisProcess {
  /** @param {{name, port, dir, appendfsync?: string, extra?: string[]}} opts `extra`: more config lines. */
  constructor({ name, port, dir, appendfsync = 'always', extra = [] }) {
    super({ name, port, dir });
    this.appendfsync = appendfsync;
    this.extra = extra;
    this.replicaOf = null;
    this.conf = join(dir, 'redis.conf');
  }

  /** @param {{host: string, port: number}|null} master replicate it, or null for a master. */
  async start({ replicaOf = null, timeoutMs } = {}) {
    this.replicaOf = replicaOf;
    return super.start(timeoutMs);
  }

  argv() {
    const lines = [
      `port ${this.port}`,
      'bind 127.0.0.1',
      'protected-mode no',
      'daemonize no',
      `dir ${this.dir}`,
      'appendonly yes',
      `appendfsync ${this.appendfsync}`,
      'save ""',
      'replica-read-only yes',
      // A replica keeps answering (stale) while its link is down rather than erroring.
      'replica-serve-stale-data yes',
      ...this.extra,
    ];
    if (this.replicaOf) lines.push(`replicaof ${this.replicaOf.host} ${this.replicaOf.port}`);
    writeFileSync(this.conf, lines.join('\n') + '\n');
    return [this.conf];
  }

  /** INFO replication as a map (rejects when the node does not answer). */
  replication() {
    return withClient(this.port, async (c) => {
      const info = await c.info('replication');
      const out = {};
      for (const line of info.split(/\r?\n/)) {
        const i = line.indexOf(':');
        if (i > 0) out[line.slice(0, i)] = line.slice(i + 1);
      }
      return out;
    });
  }
}

/** A sentinel watching `masterName` with quorum `quorum` and the given timings. */
class SentinelNode extends RedisProcess {
  constructor({ name, port, dir, masterName, master, quorum = 2, downAfterMs = 1000, failoverTimeoutMs = 5000 }) {
    super({ name, port, dir });
    Object.assign(this, { masterName, master, quorum, downAfterMs, failoverTimeoutMs });
    this.conf = join(dir, 'sentinel.conf');
    this.configWritten = false;
  }

  argv() {
    // Written once: the sentinel rewrites it with what it learns (replicas, other sentinels, epochs).
    if (!this.configWritten) {
      const m = this.masterName;
      writeFileSync(
        this.conf,
        [
          `port ${this.port}`,
          'bind 127.0.0.1',
          'protected-mode no',
          'daemonize no',
          `dir ${this.dir}`,
          `sentinel monitor ${m} ${this.master.host} ${this.master.port} ${this.quorum}`,
          `sentinel down-after-milliseconds ${m} ${this.downAfterMs}`,
          `sentinel failover-timeout ${m} ${this.failoverTimeoutMs}`,
          `sentinel parallel-syncs ${m} 1`,
        ].join('\n') + '\n',
      );
      this.configWritten = true;
    }
    return [this.conf, '--sentinel'];
  }

  /** The master this sentinel names: {host, port}, or null when it does not answer. */
  async masterAddr() {
    try {
      const r = await withClient(this.port, (c) => c.call('SENTINEL', 'get-master-addr-by-name', this.masterName));
      return r ? { host: r[0], port: Number(r[1]) } : null;
    } catch {
      return null;
    }
  }

  /** SENTINEL FAILOVER: a failover without agreement of the others (the replica is promoted). */
  failover() {
    return withClient(this.port, (c) => c.call('SENTINEL', 'FAILOVER', this.masterName));
  }
}

module.exports = { RedisNode, SentinelNode, probeClient, withClient };
