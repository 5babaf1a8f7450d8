import { execFile, execFileSync } from 'node:child_process';
import { chownSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from 'pg';
import { sparePorts } from './redis-server';

/**
 * A PostgreSQL server of the test's own, for tests that stop and restart
 * Postgres (the shared server on 5432 must never be touched): a fresh
 * cluster made with initdb in a temporary folder, on a spare port, its
 * socket in /tmp, trust authentication for user `postgres`.
 *
 * Tests run as root and Postgres refuses to run as root, so initdb and
 * pg_ctl run as the `postgres` system user (`runuser -u postgres --`), in a
 * folder chowned to it. The server is a daemon (pg_ctl), not a child of the
 * test process: call destroy() in afterAll; a server still running when the
 * test process exits is stopped (immediate) as a last resort.
 */

export interface PrivatePostgres {
  port: number;
  /** The temporary folder: data directory `data/` and server log `server.log`. */
  dir: string;
  /** postgres://postgres@127.0.0.1:<port>/<database> */
  url(database: string): string;
  /** Starts the server (again, after a stop) and waits until it accepts connections. */
  start(): Promise<void>;
  /**
   * Stops the server. `immediate` = no shutdown checkpoint, every connection
   * dropped at once, crash recovery at the next start (what a crash or an
   * outage looks like to clients); `fast` = clean shutdown.
   */
  stop(mode?: 'immediate' | 'fast'): Promise<void>;
  /** Whether the server answers (pg_ctl status). */
  running(): Promise<boolean>;
  /** The server log so far. */
  log(): string;
  /** Stops the server and removes its folder. Safe to call twice. */
  destroy(): Promise<void>;
}

/** The bin folder of the newest PostgreSQL installed under /usr/lib/postgresql. */
export function postgresBinDir(): string {
  const root = '/usr/lib/postgresql';
  const versions = existsSync(root)
    ? readdirSync(root)
        .filter((v) => existsSync(join(root, v, 'bin', 'initdb')))
        .sort((a, b) => Number(b) - Number(a))
    : [];
  if (!versions.length) throw new Error(`no PostgreSQL binaries (initdb) under ${root}/*/bin`);
  return join(root, versions[0], 'bin');
}

function asPostgres(bin: string, args: string[], timeoutMs = 60_000): Promise<string> {
  return new Promise((res, rej) =>
    execFile(
      'runuser',
      ['-u', 'postgres', '--', bin, ...args],
      { timeout: timeoutMs },
      (err, stdout, stderr) =>
        err
          ? rej(new Error(`${bin} ${args.join(' ')} failed: ${err.message}\n${stdout}\n${stderr}`))
          : res(stdout),
    ),
  );
}

/** Data directories of servers started and not destroyed, stopped on exit as a last resort. */
const live = new Map<string, string>();
process.on('exit', () => {
  for (const [data, pgCtl] of live) {
    try {
      execFileSync(
        'runuser',
        ['-u', 'postgres', '--', pgCtl, '-D', data, '-m', 'immediate', '-w', 'stop'],
        { stdio: 'ignore', timeout: 10_000 },
      );
    } catch {
      /* already stopped */
    }
  }
});

/**
 * Creates a cluster (initdb) on a spare port; does not start it.
 * @param name a label for the temporary folder.
 */
export async function privatePostgres(name = 'pg'): Promise<PrivatePostgres> {
  const bin = postgresBinDir();
  const pgCtl = join(bin, 'pg_ctl');
  const [port] = await sparePorts(1, 55432 + Math.floor(Math.random() * 500));
  const dir = mkdtempSync(join(tmpdir(), `sluice-${name}-`));
  const uid = Number(execFileSync('id', ['-u', 'postgres']).toString().trim());
  const gid = Number(execFileSync('id', ['-g', 'postgres']).toString().trim());
  chownSync(dir, uid, gid);
  const data = join(dir, 'data');
  const logFile = join(dir, 'server.log');
  await asPostgres(join(bin, 'initdb'), [
    '-D',
    data,
    '-U',
    'postgres',
    '-A',
    'trust',
    '-E',
    'UTF8',
    '--locale=C',
    '--no-sync',
  ]);
  // fsync off: only an OS crash could lose data, and nothing here simulates one.
  const serverOpts = `-p ${port} -k /tmp -c listen_addresses=127.0.0.1 -c fsync=off -c full_page_writes=off -c max_connections=50`;

  const self: PrivatePostgres = {
    port,
    dir,
    url: (database) => `postgres://postgres@127.0.0.1:${port}/${database}`,
    async start() {
      live.set(data, pgCtl);
      await asPostgres(pgCtl, [
        '-D',
        data,
        '-l',
        logFile,
        '-o',
        serverOpts,
        '-w',
        '-t',
        '60',
        'start',
      ]);
      // pg_ctl -w returns once the server accepts connections; make sure TCP does too.
      const deadline = Date.now() + 30_000;
      for (;;) {
        const c = new Client({ connectionString: self.url('postgres') });
        try {
          await c.connect();
          await c.query('SELECT 1');
          await c.end();
          return;
        } catch (e) {
          await c.end().catch(() => undefined);
          if (Date.now() > deadline)
            throw new Error(
              `private postgres on ${port} not ready: ${(e as Error).message}\n${self.log().slice(-2000)}`,
            );
          await new Promise((r) => setTimeout(r, 100));
        }
      }
    },
    async stop(mode = 'immediate') {
      if (await self.running())
        await asPostgres(pgCtl, ['-D', data, '-m', mode, '-w', '-t', '60', 'stop']);
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
    async destroy() {
      if (existsSync(data)) await self.stop('immediate').catch(() => undefined);
      live.delete(data);
      rmSync(dir, { recursive: true, force: true });
    },
  };
  return self;
}
