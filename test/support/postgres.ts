import { randomBytes } from 'node:crypto';
import type { DataSource } from 'typeorm';
import { dropDatabase, openAuditStore } from '../../src/audit/data-source';

export const PG_BASE_URL = process.env.TEST_DATABASE_URL || 'postgres://postgres@127.0.0.1:5432/postgres';

/** URL of a fresh database name on the test server (created on first use by openAuditStore). */
export function freshDatabaseUrl(name: string, base = PG_BASE_URL): string {
  const u = new URL(base);
  u.pathname = `/sluice_test_${name}_${randomBytes(3).toString('hex')}`;
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
  const { dataSource } = await openAuditStore(url, 5);
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
