import { Module } from '@nestjs/common';
import type { DataSource } from 'typeorm';
import { JobStore, MirrorStream, QueueStore, StoreConnection } from '../core/ports';
import { POSTGRES_DB, PostgresModule } from '../postgres/postgres.module';
import { HistoryQueries } from './';

/**
 * The history services ({@link HistoryQueries}) as a Nest provider, for the
 * api role: reads jobs from Redis while live, from PostgreSQL after.
 */
@Module({
  imports: [PostgresModule],
  providers: [
    {
      provide: HistoryQueries,
      inject: [POSTGRES_DB, JobStore, QueueStore, MirrorStream, StoreConnection],
      useFactory: (db: DataSource, jobs: JobStore, queues: QueueStore, mirror: MirrorStream, connection: StoreConnection) =>
        new HistoryQueries(db, { jobs, queues, mirror, connection }),
    },
  ],
  exports: [HistoryQueries],
})
export class HistoryModule {}
