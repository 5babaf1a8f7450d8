/**
 * Jest setupFiles (runs in every test file before it): no test may connect
 * to the database Sluice uses by default (`sluice`, the default DATABASE_URL
 * of src/config/config.ts) nor to the one DATABASE_URL names in the
 * environment jest was started with: those are the user's. Whatever builds
 * the URL (loadConfig with no DATABASE_URL, a helper, a script run in
 * process), a connection to either fails at connect() with an error that
 * names the fix. Tests use a fresh database instead
 * (test/support/postgres.ts: freshDatabaseUrl / openTestDb); processes
 * started by test/support/process.ts get one too.
 */
import { Client } from 'pg';
import { loadConfig } from '../../src/config/config';

const dbName = (url: string): string => decodeURIComponent(new URL(url).pathname.replace(/^\//, ''));

/** Database names no test may open. */
export const REFUSED_DATABASES: ReadonlySet<string> = new Set(
  [loadConfig({}).databaseUrl, process.env.DATABASE_URL]
    .filter((u): u is string => !!u)
    .map(dbName)
    .filter((n) => n && n !== 'postgres' && n !== 'template1'),
);

type Connect = (this: Client, cb?: (err: Error) => void) => Promise<void> | void;
const proto = Client.prototype as unknown as { connect: Connect; __sluiceGuarded?: boolean };
if (!proto.__sluiceGuarded) {
  const connect = proto.connect;
  proto.connect = function (this: Client, cb?: (err: Error) => void) {
    const name = (this as unknown as { database?: string }).database ?? '';
    if (REFUSED_DATABASES.has(name)) {
      const err = new Error(
        `test refused to connect to database "${name}" (the default or the caller's DATABASE_URL): ` +
          'pass a fresh one (test/support/postgres.ts freshDatabaseUrl / openTestDb)',
      );
      if (cb) return void process.nextTick(cb, err);
      return Promise.reject(err);
    }
    return connect.call(this, cb);
  };
  proto.__sluiceGuarded = true;
}
