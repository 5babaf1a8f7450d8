import { Inject, Injectable, OnApplicationBootstrap, OnApplicationShutdown, Optional } from '@nestjs/common';
import type { DataSource } from 'typeorm';
import { POSTGRES_DB } from '../postgres/postgres.module';
import type { SluiceConfig } from '../config/config';
import { LOGGER, SLUICE_CONFIG } from '../config/config.module';
import { JobStore, ScheduleSignals, type Clock, type Subscription } from '../core/ports';
import type { Logger } from '../logging/logger';
import { SchedulerMetrics } from '../metrics/scheduler-metrics';
import { SCHEDULE_CLOCK } from './schedule-clock';
import { ScheduleMaterializer } from './schedule-materializer';
import { ScheduleRepository } from './schedule-repository';

/** Longest lease of a claimed slot before another replica may retry its enqueue, ms. */
const MAX_LEASE_MS = 30_000;

/**
 * Claim lease for a given IDEMPOTENCY_TTL_MS: half the TTL (at most 30 s),
 * so a replica retrying a slot whose claimer died still finds the slot's
 * idempotency key in Redis if that claimer's enqueue went through.
 */
export function claimLeaseMs(idempotencyTtlMs: number): number {
  return Math.max(250, Math.min(MAX_LEASE_MS, Math.floor(idempotencyTtlMs / 2)));
}

/**
 * Runs the {@link ScheduleMaterializer} in the `scheduler` role and feeds it
 * the API's change notices ({@link ScheduleSignals}: Redis pub/sub, on its own connection).
 * Not an @nestjs/schedule interval: its next wake-up is aimed at the next
 * slot after every pass, which a fixed period cannot express.
 */
@Injectable()
export class SchedulerRunnerService implements OnApplicationBootstrap, OnApplicationShutdown {
  readonly materializer: ScheduleMaterializer;
  private subscription?: Subscription;

  constructor(
    @Inject(SLUICE_CONFIG) config: SluiceConfig,
    @Inject(LOGGER) log: Logger,
    @Inject(POSTGRES_DB) db: DataSource,
    @Inject(SCHEDULE_CLOCK) clock: Clock,
    store: JobStore,
    private readonly signals: ScheduleSignals,
    @Optional() metrics?: SchedulerMetrics,
  ) {
    this.materializer = new ScheduleMaterializer({
      repo: new ScheduleRepository(db),
      enqueue: async (job) => (await store.enqueue([job]))[0],
      clock,
      log: log.child({ component: 'schedules' }),
      leaseMs: claimLeaseMs(config.idempotencyTtlMs),
      onFired: metrics ? (queue) => metrics.slotFired(queue) : undefined,
    });
  }

  async onApplicationBootstrap(): Promise<void> {
    // A notice lost while (re)subscribing is covered by the periodic reload.
    this.subscription = await this.signals.listen(() => this.materializer.changed());
    this.materializer.start();
  }

  async onApplicationShutdown(): Promise<void> {
    await this.materializer.stop();
    this.subscription?.close();
  }
}
