/**
 * The test suite's own isolation (test/support/no-default-database.ts,
 * run.ts, process.ts): no test reaches the user's `sluice` database, and
 * what a test makes carries this run's id so the global teardown finds
 * what is left. Real PostgreSQL.
 */
import { openPostgres } from '../../src/postgres/data-source';
import { loadConfig } from '../../src/config/config';
import { PG_BASE_URL, freshDatabaseUrl } from '../support/postgres';
import { PROCESS_TEST_DB, startSluice } from '../support/process';
import { testPrefix } from '../support/redis';
import { TEST_RUN } from '../support/run';

test('a connection to the default database (loadConfig with no DATABASE_URL) is refused before anything is created', async () => {
  const { databaseUrl } = loadConfig({ ROLE: 'api' });
  expect(new URL(databaseUrl).pathname).toBe('/sluice');
  await expect(openPostgres(databaseUrl, 1)).rejects.toThrow(/refused to connect to database "sluice"/);
  const other = new URL(PG_BASE_URL);
  other.pathname = '/sluice';
  await expect(openPostgres(other.toString(), 1)).rejects.toThrow(/refused to connect to database "sluice"/);
});

test('a process is never started on the default database', async () => {
  const u = new URL(PG_BASE_URL);
  u.pathname = '/sluice';
  await expect(startSluice({ DATABASE_URL: u.toString() })).rejects.toThrow(/user's database "sluice"/);
});

test('test prefixes, databases and the process database carry this run id', () => {
  expect(TEST_RUN).toMatch(/^[0-9a-f]{6}$/);
  expect(testPrefix('x')).toMatch(new RegExp(`^t-x-${TEST_RUN}-[0-9a-f]{4}$`));
  expect(new URL(freshDatabaseUrl('x')).pathname).toMatch(new RegExp(`^/sluice_test_x_${TEST_RUN}_[0-9a-f]{6}$`));
  expect(new URL(PROCESS_TEST_DB).pathname).toBe(`/sluice_test_processes_${TEST_RUN}`);
});
