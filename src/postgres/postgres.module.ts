import { Global, Inject, Module, OnApplicationShutdown } from '@nestjs/common';
import type { DataSource } from 'typeorm';
import type { SluiceConfig } from '../config/config';
import { LOGGER, SLUICE_CONFIG } from '../config/config.module';
import type { Logger } from '../logging/logger';
import { openPostgres } from './data-source';

export const POSTGRES_DB = Symbol('POSTGRES_DB');

/**
 * The PostgreSQL connection of the roles that need it (audit, api): the
 * database is created if missing and migrations are applied at start.
 */
@Global()
@Module({
  providers: [
    {
      provide: POSTGRES_DB,
      inject: [SLUICE_CONFIG, LOGGER],
      useFactory: async (c: SluiceConfig, log: Logger) => {
        let opened;
        try {
          opened = await openPostgres(c.databaseUrl);
        } catch (e) {
          const safe = c.databaseUrl.replace(/\/\/([^:@/]*):[^@/]*@/, '//$1:***@');
          throw new Error(`cannot use PostgreSQL (DATABASE_URL=${safe}): ${(e as Error).message}`);
        }
        const { dataSource, applied } = opened;
        if (applied.length) log.info({ migrations: applied }, 'database migrated');
        return dataSource;
      },
    },
  ],
  exports: [POSTGRES_DB],
})
export class PostgresModule implements OnApplicationShutdown {
  constructor(@Inject(POSTGRES_DB) private readonly db: DataSource) {}

  async onApplicationShutdown(): Promise<void> {
    await this.db.destroy().catch(() => undefined);
  }
}
