import { randomBytes } from 'node:crypto';
import type { DataSource } from 'typeorm';
import { dropDatabase, openPostgres } from '../../src/postgres/data-source';
import { TEST_RUN } from './run';

export const PG_BASE_URL = process.env.TEST_DATABASE_URL || 'postgres://postgres@127.0.0.1:5432/postgres';

/**
 * URL of a fresh database name on the test server (created on first use by
 * openPostgres): `sluice_test_<name>_<run>_<hex>` (run: test/support/run.ts);
 * the global teardown drops any of the run's databases left behind and fails the run.
 */
export function freshDatabaseUrl(name: string, base = PG_BASE_URL): string {
  const u = new URL(base);
  u.pathname = `/sluice_test_${name}_${TEST_RUN}_${randomBytes(3).toString('hex')}`;
  return u.toString();
}

export interface TestDb {
  url: string;
  dataSource: DataSource;
  close(): Promise<void>;
}

/** A migrated, private database; close() drops it. */
export async function openTestDb(name: string): Promise<TestDb> {
  const url = freshDatabaseUrl(name);
  const { dataSource } = await openPostgres(url, 5);
  return {
    url,
    dataSource,
    close: async () => {
      await dataSource.destroy();
      await dropDatabase(url);
    },
  };
}

export { dropDatabase };

/** A UUIDv7 whose timestamp is `ms` (random low bits), like one the server makes at that time. */
export function v7At(ms: number): string {
  const r = randomBytes(10).toString('hex');
  const h = ms.toString(16).padStart(12, '0') + '7' + r.slice(0, 3) + ((parseInt(r[3], 16) & 3) | 8).toString(16) + r.slice(4, 19);
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
}

/**
 * SQL for a UUIDv7-like id created at the timestamptz `at` (random low
 * bits): job ids start with their creation time, which retention relies on
 * (src/maintenance/retention.ts), so rows made up in SQL must too.
 */
export const v7AtSql = (at: string): string =>
  `(lpad(to_hex((extract(epoch FROM ${at}) * 1000)::bigint), 12, '0') || '7' || substr(md5(random()::text), 1, 19))::uuid`;
