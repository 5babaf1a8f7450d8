import { Module } from '@nestjs/common';
import type { DataSource } from 'typeorm';
import { RedisJobStore } from '../redis/redis-job-store';
import { AUDIT_DB, AuditDbModule } from '../postgres/postgres.module';
import { HistoryQueries } from './';

/**
 * The history services ({@link HistoryQueries}) as a Nest provider, for the
 * api role: reads jobs from Redis while live, from PostgreSQL after.
 */
@Module({
  imports: [AuditDbModule],
  providers: [{ provide: HistoryQueries, inject: [AUDIT_DB, RedisJobStore], useFactory: (db: DataSource, store: RedisJobStore) => new HistoryQueries(db, store) }],
  exports: [HistoryQueries],
})
export class HistoryModule {}
