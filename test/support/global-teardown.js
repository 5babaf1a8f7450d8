/**
 * Jest globalTeardown: what this run (SLUICE_TEST_RUN, see global-setup.js)
 * left on the shared services.
 * - Drops the run's database for test processes (test/support/process.ts:
 *   `sluice_test_processes_<run>`), which is expected.
 * - Lists the run's Redis keys left under `t-*` (test prefixes are
 *   `t-<name>-<run>-<hex>`, test/support/redis.ts) and the run's test
 *   databases left (`sluice_test_<name>_<run>_<hex>`, test/support/postgres.ts),
 *   deletes them, and fails the run naming each prefix and database: a test
 *   that leaks must be fixed, not swept up after.
 * Services that are down are skipped with a note (the tests then failed anyway).
 */
const Redis = require('ioredis');
const { Client } = require('pg');

const REDIS_URL = process.env.REDIS_URL || 'redis://127.0.0.1:6379';
const PG_BASE_URL = process.env.TEST_DATABASE_URL || 'postgres://postgres@127.0.0.1:5432/postgres';

/** Keys of this run left under test prefixes, counted per prefix. */
async function leftKeys(run) {
  const redis = new Redis(REDIS_URL, { lazyConnect: true, maxRetriesPerRequest: 1, retryStrategy: () => null });
  const perPrefix = new Map();
  try {
    await redis.connect();
    let cursor = '0';
    do {
      const [next, keys] = await redis.scan(cursor, 'MATCH', `t-*-${run}-*`, 'COUNT', 1000);
      cursor = next;
      for (const k of keys) {
        const prefix = k.split(':')[0];
        perPrefix.set(prefix, (perPrefix.get(prefix) || 0) + 1);
      }
      if (keys.length) await redis.unlink(...keys);
    } while (cursor !== '0');
  } catch (e) {
    process.stderr.write(`global teardown: Redis at ${REDIS_URL} not checked (${e.message})\n`);
  } finally {
    redis.disconnect();
  }
  return perPrefix;
}

/** Drops the run's process database; returns the run's test databases that were left (and drops them). */
async function leftDatabases(run) {
  const client = new Client({ connectionString: PG_BASE_URL });
  const left = [];
  try {
    await client.connect();
    const { rows } = await client.query(`SELECT datname FROM pg_database WHERE datname LIKE 'sluice\\_test\\_%' AND datname LIKE $1`, [`%\\_${run}%`]);
    for (const { datname } of rows) {
      if (datname !== `sluice_test_processes_${run}`) left.push(datname);
      await client.query(`DROP DATABASE IF EXISTS "${datname.replace(/"/g, '""')}" WITH (FORCE)`);
    }
  } catch (e) {
    process.stderr.write(`global teardown: PostgreSQL at ${new URL(PG_BASE_URL).host} not checked (${e.message})\n`);
  } finally {
    await client.end().catch(() => undefined);
  }
  return left;
}

module.exports = async function globalTeardown() {
  const run = process.env.SLUICE_TEST_RUN;
  if (!/^[0-9a-f]{6}$/.test(run || '')) return;
  const [keys, dbs] = await Promise.all([leftKeys(run), leftDatabases(run)]);
  const problems = [
    ...[...keys].map(([prefix, n]) => `Redis: ${n} key(s) under ${prefix}:`),
    ...dbs.map((d) => `PostgreSQL: database ${d}`),
  ];
  if (problems.length) {
    throw new Error(`tests of run ${run} left these behind (now deleted; fix the test that leaks them):\n  ${problems.join('\n  ')}`);
  }
};
