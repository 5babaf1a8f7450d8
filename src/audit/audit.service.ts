import { Inject, Injectable, OnApplicationBootstrap, BeforeApplicationShutdown } from '@nestjs/common';
import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import type { DataSource } from 'typeorm';
import type { SluiceConfig } from '../config/config';
import { LOGGER, SLUICE_CONFIG } from '../config/config.module';
import type { Logger } from '../logging/logger';
import type { RedisClient } from '../redis/connection';
import { REDIS } from '../redis/redis.module';
import { RedisJobStore } from '../redis/redis-job-store';
import { AuditWriter } from './audit-writer';
import { AUDIT_DB } from './audit-db.module';
import { pruneHistory } from './retention';

/** Retention pass period: hourly is plenty for a days-long retention. */
const PRUNE_INTERVAL_MS = 3_600_000;

/** The `audit` role: runs an AuditWriter and the PostgreSQL retention pruner. */
@Injectable()
export class AuditService implements OnApplicationBootstrap, BeforeApplicationShutdown {
  readonly writerId = `audit-${hostname()}-${process.pid}-${randomBytes(3).toString('hex')}`;
  private writer?: AuditWriter;
  private pruneTimer?: NodeJS.Timeout;

  constructor(
    @Inject(SLUICE_CONFIG) private readonly config: SluiceConfig,
    @Inject(LOGGER) private readonly log: Logger,
    @Inject(REDIS) private readonly redis: RedisClient,
    @Inject(AUDIT_DB) private readonly db: DataSource,
    private readonly store: RedisJobStore,
  ) {}

  onApplicationBootstrap(): void {
    this.writer = new AuditWriter(
      this.redis,
      this.store,
      this.db,
      { writerId: this.writerId, keepCompletedCount: this.config.keepCompletedCount, keepCompletedMs: this.config.keepCompletedMs },
      this.log.child({ component: 'audit', writerId: this.writerId }),
    );
    this.writer.start();
    this.pruneTimer = setInterval(() => {
      pruneHistory(this.db, this.config.retentionDays)
        .then((n) => n && this.log.info({ pruned: n, retentionDays: this.config.retentionDays }, 'history pruned'))
        .catch((e) => this.log.warn({ err: (e as Error).message }, 'history pruning failed'));
    }, PRUNE_INTERVAL_MS);
    this.pruneTimer.unref?.();
    this.log.info({ writerId: this.writerId }, 'audit writer started');
  }

  async beforeApplicationShutdown(): Promise<void> {
    clearInterval(this.pruneTimer);
    await this.writer?.stop();
  }
}
