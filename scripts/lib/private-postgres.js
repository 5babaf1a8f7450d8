/*
 * A PostgreSQL server of the script's own, for scripts that stop and restart
 * Postgres (the soak): the shared server on 5432 is never touched. A fresh
 * cluster made with initdb in a temporary folder, on a spare port, its socket
 * in the folder, trust authentication for user `postgres`.
 *
 * The plain-JS counterpart of test/support/private-postgres.ts (the scripts
 * do not load TypeScript test code). Scripts usually run as root and
 * PostgreSQL refuses to run as root, so initdb and pg_ctl run as the
 * `postgres` system user (`runuser -u postgres --`) when we are root, in a
 * folder chowned to it. The server is a daemon (pg_ctl), not a child of this
 * process: call destroy() at the end; a server still running when the process
 * exits is stopped (immediate) as a last resort.
 */
const { execFile, execFileSync } = require('node:child_process');
const { chownSync, existsSync, mkdirSync, readdirSync, readFileSync, rmSync } = require('node:fs');
const { join } = require('node:path');
const { Client } = require('pg');

/** The bin folder of the newest PostgreSQL under /usr/lib/postgresql, else the one on PATH. */
function postgresBinDir() {
  const root = '/usr/lib/postgresql';
  const versions = existsSync(root)
    ? readdirSync(root)
        .filter((v) => existsSync(join(root, v, 'bin', 'initdb')))
        .sort((a, b) => Number(b) - Number(a))
    : [];
  if (versions.length) return join(root, versions[0], 'bin');
  for (const dir of (process.env.PATH || '').split(':')) {
    if (dir && existsSync(join(dir, 'initdb')) && existsSync(join(dir, 'pg_ctl'))) return dir;
  }
  throw new Error(`no PostgreSQL binaries (initdb, pg_ctl) under ${root}/*/bin or on PATH`);
}

const isRoot = () => typeof process.getuid === 'function' && process.getuid() === 0;

/** Runs a PostgreSQL binary, as the `postgres` system user when we are root. */
function asPostgres(bin, args, timeoutMs = 60000) {
  const [cmd, argv] = isRoot() ? ['runuser', ['-u', 'postgres', '--', bin, ...args]] : [bin, args];
  return new Promise((resolve, reject) =>
    execFile(cmd, argv, { timeout: timeoutMs }, (err, stdout, stderr) =>
      err ? reject(new Error(`${bin} ${args.join(' ')} failed: ${err.message}\n${stdout}\n${stderr}`)) : resolve(stdout),
    ),
  );
}

/** Data directories of servers started and not destroyed, stopped on exit as a last resort. */
const live = new Map();
process.on('exit', () => {
  for (const [data, pgCtl] of live) {
    try {
      const args = [pgCtl, '-D', data, '-m', 'immediate', '-w', 'stop'];
      if (isRoot()) execFileSync('runuser', ['-u', 'postgres', '--', ...args], { stdio: 'ignore', timeout: 10000 });
      else execFileSync(args[0], args.slice(1), { stdio: 'ignore', timeout: 10000 });
    } catch {
      /* already stopped */
    }
  }
});

/**
 * Creates a cluster (initdb) in `dir` (created, and chowned to `postgres`
 * when we are root; its parent folders must let `postgres` through, e.g.
 * mode 0711) listening on `port`; does not start it.
 * @returns {Promise<{port, dir, url(db): string, start(): Promise<void>,
 *   stop(mode?: 'immediate'|'fast'): Promise<void>, running(): Promise<boolean>,
 *   log(): string, destroy(): Promise<void>}>}
 */
async function privatePostgres({ port, dir }) {
  const bin = postgresBinDir();
  const pgCtl = join(bin, 'pg_ctl');
  mkdirSync(dir, { recursive: true });
  if (isRoot()) {
    const uid = Number(execFileSync('id', ['-u', 'postgres']).toString().trim());
    const gid = Number(execFileSync('id', ['-g', 'postgres']).toString().trim());
    chownSync(dir, uid, gid);
  }
  const data = join(dir, 'data');
  const logFile = join(dir, 'server.log');
  await asPostgres(join(bin, 'initdb'), ['-D', data, '-U', 'postgres', '-A', 'trust', '-E', 'UTF8', '--locale=C', '--no-sync']);
  // fsync off: only an OS crash could lose data, and nothing here simulates
  // one (an immediate stop is a crash of the server, not of the machine).
  const serverOpts = `-p ${port} -k ${dir} -c listen_addresses=127.0.0.1 -c fsync=off -c full_page_writes=off -c max_connections=60`;

  const self = {
    port,
    dir,
    url: (database) => `postgres://postgres@127.0.0.1:${port}/${database}`,
    /** Starts the server (again, after a stop) and waits until it accepts TCP connections. */
    async start() {
      live.set(data, pgCtl);
      await asPostgres(pgCtl, ['-D', data, '-l', logFile, '-o', serverOpts, '-w', '-t', '60', 'start']);
      const deadline = Date.now() + 30000;
      for (;;) {
        const c = new Client({ connectionString: self.url('postgres') });
        c.on('error', () => undefined);
        try {
          await c.connect();
          await c.query('SELECT 1');
          await c.end();
          return;
        } catch (e) {
          await c.end().catch(() => undefined);
          if (Date.now() > deadline) throw new Error(`private postgres on ${port} not ready: ${e.message}\n${self.log().slice(-2000)}`);
          await new Promise((r) => setTimeout(r, 100));
        }
      }
    },
    /**
     * Stops the server. `immediate`: no shutdown checkpoint, every connection
     * dropped at once, crash recovery at the next start; `fast`: clean.
     */
    async stop(mode = 'immediate') {
      if (await self.running()) await asPostgres(pgCtl, ['-D', data, '-m', mode, '-w', '-t', '60', 'stop']);
    },
    async running() {
      try {
        await asPostgres(pgCtl, ['-D', data, 'status']);
        return true;
      } catch {
        return false;
      }
    },
    log() {
      try {
        return readFileSync(logFile, 'utf8');
      } catch {
        return '';
      }
    },
    /** Stops the server (immediate) and removes its folder. Safe to call twice. */
    async destroy() {
      if (existsSync(data)) await self.stop('immediate').catch(() => undefined);
      live.delete(data);
      rmSync(dir, { recursive: true, force: true });
    },
  };
  return self;
}

module.exports = { privatePostgres, postgresBinDir };
