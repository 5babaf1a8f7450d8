import { Client } from 'pg';
import { DataSource } from 'typeorm';
import { POSTGRES_ENTITIES } from './entities';
import { AuditSchema1796000000000 } from './migrations/1796000000000-AuditSchema';
import { QueueEpochs1796000200000 } from './migrations/1796000200000-QueueEpochs';
import { HistoryQueries1796000300000 } from './migrations/1796000300000-HistoryQueries';
import { Schedules1796000600000 } from './migrations/1796000600000-Schedules';
import { DropUnusedEventIndex1796000700000 } from './migrations/1796000700000-DropUnusedEventIndex';
import { StreamEntryKeys1796000800000 } from './migrations/1796000800000-StreamEntryKeys';
import { LeanJobIndexes1796000900000 } from './migrations/1796000900000-LeanJobIndexes';
import { AuditQuarantine1796001000000 } from './migrations/1796001000000-AuditQuarantine';
import { ApiKeys1796001100000 } from './migrations/1796001100000-ApiKeys';
import { Users1796001200000 } from './migrations/1796001200000-Users';
import { OperatorAudit1796001300000 } from './migrations/1796001300000-OperatorAudit';
import { KeyRateLimits1796001310000 } from './migrations/1796001310000-KeyRateLimits';
import { ConsoleQueries1796001400000 } from './migrations/1796001400000-ConsoleQueries';
import { Projects1796001500000 } from './migrations/1796001500000-Projects';
import { ConcurrencyKeys1796001600000 } from './migrations/1796001600000-ConcurrencyKeys';
import { Workflows1796001700000 } from './migrations/1796001700000-Workflows';
import { PartitionedHistory1796001800000 } from './migrations/1796001800000-PartitionedHistory';
import { DependencyQueues1796002050000 } from './migrations/1796002050000-DependencyQueues';
import { FoldedExecutionEvents1796001900000 } from './migrations/1796001900000-FoldedExecutionEvents';
import { QueueSettings1796002000000 } from './migrations/1796002000000-QueueSettings';
import { DlqSummaries1796002100000 } from './migrations/1796002100000-DlqSummaries';
import { Organizations1796002200000 } from './migrations/1796002200000-Organizations';

/** Every migration, in order. Append only. */
export const MIGRATIONS = [
  AuditSchema1796000000000,
  QueueEpochs1796000200000,
  HistoryQueries1796000300000,
  Schedules1796000600000,
  DropUnusedEventIndex1796000700000,
  StreamEntryKeys1796000800000,
  LeanJobIndexes1796000900000,
  AuditQuarantine1796001000000,
  ApiKeys1796001100000,
  Users1796001200000,
  OperatorAudit1796001300000,
  KeyRateLimits1796001310000,
  ConsoleQueries1796001400000,
  Projects1796001500000,
  ConcurrencyKeys1796001600000,
  Workflows1796001700000,
  PartitionedHistory1796001800000,
  FoldedExecutionEvents1796001900000,
  QueueSettings1796002000000,
  DependencyQueues1796002050000,
  DlqSummaries1796002100000,
  Organizations1796002200000,
];

/**
 * Builds the TypeORM data source (never `synchronize`: migrations only).
 * @param before the name of a migration: the data source knows only the ones before it (tests and
 *   benchmarks of an upgrade build the schema an earlier version left). @throws Error for an unknown name.
 */
export function createDataSource(databaseUrl: string, poolSize = 10, before?: string): DataSource {
  const upTo = before === undefined ? MIGRATIONS.length : MIGRATIONS.findIndex((m) => m.name === before);
  if (upTo < 0) throw new Error(`createDataSource: no migration named ${before}`);
  return new DataSource({
    type: 'postgres',
    url: databaseUrl,
    entities: POSTGRES_ENTITIES,
    migrations: MIGRATIONS.slice(0, upTo),
    migrationsTableName: 'sluice_migrations',
    synchronize: false,
    logging: false,
    extra: { max: poolSize, application_name: 'sluice' },
  });
}

/**
 * Creates the database named in `databaseUrl` when it does not exist, by
 * connecting to the server's `postgres` database. Safe when several
 * processes start at once against a missing database: one creates it, the
 * others find it made.
 * @returns true when this call created it.
 * @throws Error when the server is unreachable or the role may not create it.
 */
export async function ensureDatabase(databaseUrl: string): Promise<boolean> {
  const url = new URL(databaseUrl);
  const name = decodeURIComponent(url.pathname.replace(/^\//, '')) || 'postgres';
  const admin = new URL(databaseUrl);
  admin.pathname = '/postgres';
  const client = new Client({ connectionString: admin.toString() });
  await client.connect();
  try {
    const r = await client.query('SELECT 1 FROM pg_database WHERE datname = $1', [name]);
    if (r.rowCount) return false;
    try {
      await client.query(`CREATE DATABASE "${name.replace(/"/g, '""')}"`);
    } catch (e) {
      // Another process created it at the same moment: 42P04 (duplicate_database) when its
      // CREATE committed first, 23505 (the unique index of pg_database) when both ran at once.
      const code = (e as { code?: string }).code;
      if (code !== '42P04' && code !== '23505') throw e;
      return false;
    }
    return true;
  } finally {
    await client.end();
  }
}

/**
 * Drops the database named in `databaseUrl` if it exists, forcing its
 * connections out, through the server's `postgres` database. For throwaway
 * databases (tests, benchmarks, the query-plan script); Sluice never drops its own.
 * @throws Error when the server is unreachable or the role may not drop it.
 */
export async function dropDatabase(databaseUrl: string): Promise<void> {
  const url = new URL(databaseUrl);
  const name = decodeURIComponent(url.pathname.replace(/^\//, ''));
  url.pathname = '/postgres';
  const client = new Client({ connectionString: url.toString() });
  await client.connect();
  try {
    await client.query(`DROP DATABASE IF EXISTS "${name.replace(/"/g, '""')}" WITH (FORCE)`);
  } finally {
    await client.end();
  }
}

/**
 * Creates the database if missing, connects, and applies pending migrations
 * (serialized across processes by a Postgres advisory lock).
 * @returns the initialized data source and the names of the migrations applied.
 */
export async function openPostgres(databaseUrl: string, poolSize = 10): Promise<{ dataSource: DataSource; applied: string[] }> {
  await ensureDatabase(databaseUrl);
  // At least 2: the advisory lock holds one connection while the migrations run on another.
  const dataSource = createDataSource(databaseUrl, Math.max(2, poolSize));
  await dataSource.initialize();
  const qr = dataSource.createQueryRunner();
  try {
    await qr.query('SELECT pg_advisory_lock(774411)');
    const applied = await dataSource.runMigrations({ transaction: 'each' });
    return { dataSource, applied: applied.map((m) => m.name) };
  } finally {
    await qr.query('SELECT pg_advisory_unlock(774411)').catch(() => undefined);
    await qr.release();
  }
}
