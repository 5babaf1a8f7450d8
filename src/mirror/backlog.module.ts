import { Global, Inject, Injectable, Module, OnApplicationShutdown, OnModuleInit, Optional } from '@nestjs/common';
import type { Registry } from 'prom-client';
import { METRICS_REGISTRY } from '../metrics/metrics.module';
import { registerBacklogMetrics } from './backlog-metrics';
import type { SluiceConfig } from '../config/config';
import { LOGGER, SLUICE_CONFIG } from '../config/config.module';
import type { Logger } from '../logging/logger';
import { JobStore, MirrorStream, QueueStore } from '../core/ports';
import { BacklogGuard, BacklogMetrics } from './backlog';

/** How often the backlog is read (one SMEMBERS, plus an XLEN and an XRANGE per queue, pipelined). */
export const BACKLOG_REFRESH_MS = 1000;

/**
 * Load shedding for enqueue (API.md: 503 `unavailable` when the audit backlog
 * is over its bound). Installs a {@link BacklogGuard} as the process's
 * JobStore admission check: while more than AUDIT_MAX_BACKLOG audit
 * events wait in Redis (PostgreSQL unreachable, or the writers too slow),
 * every enqueue throws UnavailableError and writes nothing; it is accepted
 * again as soon as the backlog is back within the bound. Logs one warn line
 * when the bound is crossed and one info line when the backlog falls back.
 */
@Injectable()
export class BacklogService implements OnModuleInit, OnApplicationShutdown {
  readonly guard: BacklogGuard;

  constructor(
    @Inject(SLUICE_CONFIG) config: SluiceConfig,
    @Inject(LOGGER) private readonly log: Logger,
    private readonly store: JobStore,
    queues: QueueStore,
    mirror: MirrorStream,
    @Optional() @Inject(METRICS_REGISTRY) registry?: Registry,
  ) {
    this.guard = new BacklogGuard({ queues, mirror }, config.auditMaxBacklog, (over, s) => {
      const fields = { pending: s.pending, lagMs: s.lagMs, max: config.auditMaxBacklog };
      if (over) this.log.warn(fields, 'audit backlog over AUDIT_MAX_BACKLOG: enqueue refused (503 unavailable) until it drains');
      else this.log.info(fields, 'audit backlog back within AUDIT_MAX_BACKLOG: enqueue accepted again');
    });
    // The backlog series of GET /metrics, for the roles that enqueue (api) or drain (audit).
    if (registry && (config.roles.has('api') || config.roles.has('audit'))) registerBacklogMetrics(registry, () => this.metrics);
  }

  /** Installed before the application starts serving; the first read is awaited. */
  async onModuleInit(): Promise<void> {
    this.store.setAdmission(() => this.guard.admit());
    await this.guard.start(BACKLOG_REFRESH_MS);
  }

  onApplicationShutdown(): void {
    this.guard.stop();
    this.store.setAdmission(null);
  }

  /**
   * Current backlog, bound, state and refusal count, ready for GET /metrics
   * (prom-client and the endpoint come with the HTTP API).
   */
  get metrics(): BacklogMetrics {
    return this.guard.metrics;
  }
}

/**
 * Imported for every role (src/app.module.ts): the guard sits on the one
 * JobStore of the process, so whichever role calls enqueue (the API's
 * POST /jobs, the scheduler's cron materialization, a handler enqueueing a
 * follow-up job) is shed the same way, and every process can report the backlog.
 */
@Global()
@Module({ providers: [BacklogService], exports: [BacklogService] })
export class BacklogModule {}
