/*
 * Starting and cleaning up a Sluice process for the scripts (demo, load):
 * a free port, `node dist/main.js` with a private REDIS_PREFIX and database,
 * readiness through GET /readyz, a graceful stop, and removal of the Redis
 * keys and the database afterwards. Plain Node plus the repo's pg and the
 * build's Redis factory (./redis.js).
 */
const { spawn } = require('node:child_process');
const net = require('node:net');
const { randomBytes } = require('node:crypto');
const path = require('node:path');
const { existsSync } = require('node:fs');
const { sleep, getJson } = require('./http');

const ROOT = path.resolve(__dirname, '../..');
const MAIN = path.join(ROOT, 'dist/main.js');

/** True when nothing listens on host:port (we could bind it). */
function portFree(port, host = '127.0.0.1') {
  return new Promise((resolve) => {
    const s = net.createServer();
    s.once('error', () => resolve(false));
    s.listen(port, host, () => s.close(() => resolve(true)));
  });
}

/** A TCP port the OS says is free right now (small race: another process may take it). */
function freePort(host = '127.0.0.1') {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.once('error', reject);
    s.listen(0, host, () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });
}

/** `preferred` when free (e.g. 3000, the documented default), else any free port. */
async function pickPort(preferred) {
  if (preferred && (await portFree(preferred))) return preferred;
  return freePort();
}

/**
 * A unique prefix and a database of its own (API.md: one database per prefix;
 * restore and counts assume it). `DATABASE_URL` in the environment wins, and
 * is then never dropped.
 * @returns {{prefix: string, databaseUrl: string, ownDb: boolean}}
 */
function isolation(kind) {
  const prefix = process.env.REDIS_PREFIX || `sluice-${kind}-${Date.now().toString(36)}${randomBytes(2).toString('hex')}`;
  const ownDb = !process.env.DATABASE_URL;
  const databaseUrl = process.env.DATABASE_URL || `postgres://postgres@127.0.0.1:5432/${prefix.replace(/[^a-z0-9_]/gi, '_')}`;
  return { prefix, databaseUrl, ownDb };
}

/**
 * Spawns `node dist/main.js` with `env` on top of the caller's environment.
 * stdout (JSON logs) is kept in a buffer; warnings and errors (pino level ≥ 40)
 * are echoed to stderr prefixed `[sluice]` (or handed to `onLog(line)`) unless `quiet`.
 * `main`: another build's entry file instead of dist/main.js (A/B runs).
 * @returns {{proc, url: string, output(): string, stop(timeoutMs?): Promise<number|null>}}
 *   stop() sends SIGTERM, waits for the exit (SIGKILL after timeoutMs, default 45 s)
 *   and resolves with the exit code.
 * @throws Error when dist/main.js is missing (run the build first).
 */
function startServer({ port, host = '127.0.0.1', env, quiet = false, onLog, main = MAIN }) {
  if (!existsSync(main)) throw new Error(`${main} missing: run \`npm run build\` first`);
  // SLUICE_NODE_ARGS: extra node flags for the server (e.g. `--cpu-prof --cpu-prof-dir=/tmp/prof`; NODE_OPTIONS refuses --cpu-prof).
  const nodeArgs = (process.env.SLUICE_NODE_ARGS || '').split(/\s+/).filter(Boolean);
  const proc = spawn(process.execPath, [...nodeArgs, main], {
    env: { ...process.env, NODE_ENV: 'production', LOG_LEVEL: 'info', ...env, PORT: String(port), HOST: host },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  const echo = (d) => {
    out += d;
    if (out.length > 4e6) out = out.slice(-2e6); // a long run must not grow without bound
    if (quiet) return;
    for (const line of String(d).split('\n')) {
      if (!/"level":(40|50|60)|^sluice: /.test(line)) continue;
      if (onLog) onLog(line);
      else process.stderr.write(`[sluice] ${line}\n`);
    }
  };
  proc.stdout.on('data', echo);
  proc.stderr.on('data', echo);
  const exited = new Promise((r) => proc.on('exit', (code) => r(code)));
  return {
    proc,
    url: `http://${host}:${port}`,
    output: () => out,
    exited,
    stop: async (timeoutMs = 45000) => {
      if (proc.exitCode !== null || proc.signalCode !== null) return proc.exitCode;
      proc.kill('SIGTERM');
      const t = setTimeout(() => proc.kill('SIGKILL'), timeoutMs);
      const code = await exited;
      clearTimeout(t);
      return code;
    },
  };
}

/**
 * Waits until the server is ready: GET /readyz 200; if the build has no
 * /readyz (404), GET /healthz 200 instead. Polls every 200 ms.
 * @returns the path that answered ('/readyz' or '/healthz').
 * @throws Error when the process exits first or after timeoutMs (default 60 s), with its last output.
 */
async function waitReady(server, timeoutMs = 60000) {
  const deadline = Date.now() + timeoutMs;
  let probe = '/readyz';
  let last = '';
  while (Date.now() < deadline) {
    if (server.proc.exitCode !== null) throw new Error(`sluice exited with code ${server.proc.exitCode}:\n${server.output().slice(-3000)}`);
    try {
      const r = await getJson(server.url + probe, 2000);
      if (r.status === 200) return probe;
      if (r.status === 404 && probe === '/readyz') probe = '/healthz';
      last = `${probe} → ${r.status} ${JSON.stringify(r.body)}`;
    } catch (e) {
      last = `${probe}: ${e.message}`; // not listening yet
    }
    await sleep(200);
  }
  throw new Error(`sluice not ready within ${timeoutMs} ms (${last}):\n${server.output().slice(-3000)}`);
}

/**
 * Waits until the process has logged a line matching `re` (e.g.
 * `"msg":"sluice listening`; readiness itself: waitReady, every role serves /readyz).
 * @throws Error when the process exits first or after timeoutMs (default 60 s).
 */
async function waitLog(server, re, timeoutMs = 60000) {
  const deadline = Date.now() + timeoutMs;
  while (!re.test(server.output())) {
    if (server.proc.exitCode !== null) throw new Error(`sluice exited with code ${server.proc.exitCode}:\n${server.output().slice(-3000)}`);
    if (Date.now() > deadline) throw new Error(`sluice did not log ${re} within ${timeoutMs} ms:\n${server.output().slice(-3000)}`);
    await sleep(100);
  }
}

/**
 * Removes everything a run left: the Redis keys under `prefix:` and, when
 * `dropDb`, the database of `databaseUrl` (WITH (FORCE): the server is gone).
 * Errors are reported, not thrown: cleanup must not hide the run's result.
 */
async function cleanup({ prefix, databaseUrl, dropDb, redisUrl = process.env.REDIS_URL || 'redis://127.0.0.1:6379' }) {
  const { Client } = require('pg');
  const { openRedis } = require('./redis');
  let r;
  try {
    r = openRedis(redisUrl);
    let cursor = '0';
    do {
      const [c, keys] = await r.scan(cursor, 'MATCH', `${prefix}:*`, 'COUNT', 1000);
      cursor = c;
      if (keys.length) await r.unlink(...keys);
    } while (cursor !== '0');
  } catch (e) {
    process.stderr.write(`cleanup: redis keys ${prefix}:* not removed: ${e.message}\n`);
  } finally {
    r?.disconnect(); // it would reconnect for ever
  }
  if (!dropDb) return;
  try {
    const u = new URL(databaseUrl);
    const db = u.pathname.slice(1);
    u.pathname = '/postgres';
    const admin = new Client({ connectionString: u.toString() });
    await admin.connect();
    await admin.query(`DROP DATABASE IF EXISTS "${db.replace(/"/g, '""')}" WITH (FORCE)`);
    await admin.end();
  } catch (e) {
    process.stderr.write(`cleanup: database not dropped: ${e.message}\n`);
  }
}

module.exports = { ROOT, pickPort, freePort, isolation, startServer, waitReady, waitLog, cleanup };
