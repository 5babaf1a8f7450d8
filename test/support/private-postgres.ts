import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sparePorts } from './redis-server';

/**
 * A PostgreSQL server of the test's own, for tests that stop and restart
 * Postgres (the shared server on 5432 must never be touched): a fresh
 * cluster made with initdb in a temporary folder, on a spare port, its
 * socket in that folder, trust authentication for user `postgres`.
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

/** What scripts/lib/private-postgres.js exports (plain JS: the soak uses it too, without TypeScript). */
interface PrivatePostgresLib {
  privatePostgres(opts: { port: number; dir: string }): Promise<PrivatePostgres>;
  postgresBinDir(): string;
}
// eslint-disable-next-line @typescript-eslint/no-require-imports
const lib = require('../../scripts/lib/private-postgres.js') as PrivatePostgresLib;

/** The bin folder of the newest PostgreSQL installed under /usr/lib/postgresql (or on PATH). */
export const postgresBinDir = (): string => lib.postgresBinDir();

/**
 * Creates a cluster (initdb) on a spare port in a fresh temporary folder;
 * does not start it. The server itself is scripts/lib/private-postgres.js
 * (shared with `npm run soak`).
 * @param name a label for the temporary folder.
 */
export async function privatePostgres(name = 'pg'): Promise<PrivatePostgres> {
  const [port] = await sparePorts(1, 55432 + Math.floor(Math.random() * 500));
  const dir = mkdtempSync(join(tmpdir(), `sluice-${name}-`));
  return lib.privatePostgres({ port, dir });
}
