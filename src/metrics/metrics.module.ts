import { DynamicModule, Global, Module, Provider } from '@nestjs/common';
import type { Registry } from 'prom-client';
import { BacklogService } from '../mirror/backlog.module';
import type { Role } from '../config/config';
import { HandlerRegistry } from '../handlers/handler-registry';
import { QueueStore, StoreConnection } from '../core/ports';
import { registerBacklogMetrics } from './backlog-metrics';
import { JobMetrics } from './job-metrics';
import { MetricsController } from './metrics.controller';
import { registerQueueMetrics } from './queue-metrics';
import { SchedulerMetrics } from './scheduler-metrics';
import { SluiceMetrics } from './sluice-metrics';

/** Injection token of the process's prom-client Registry (SluiceMetrics.registry), for series registered outside src/metrics. */
export const METRICS_REGISTRY = Symbol('METRICS_REGISTRY');

/** Token of the provider that registered the scrape-time series of the process's roles (queues, backlog). */
const ROLE_GAUGES = Symbol('ROLE_GAUGES');

/**
 * `GET /metrics` and the metrics of this process, imported for every role
 * (src/app.module.ts): each role's series go on the one registry of the
 * process, so `ROLE=all` serves them all and `ROLE=worker` only its own.
 * Global so the role modules inject what they report to: {@link JobMetrics}
 * (worker), {@link SchedulerMetrics} (scheduler), {@link METRICS_REGISTRY}.
 */
@Global()
@Module({})
export class MetricsModule {
  static forRoles(roles: ReadonlySet<Role>): DynamicModule {
    const providers: Provider[] = [
      { provide: SluiceMetrics, useFactory: () => new SluiceMetrics() },
      { provide: METRICS_REGISTRY, inject: [SluiceMetrics], useFactory: (m: SluiceMetrics): Registry => m.registry },
      {
        provide: ROLE_GAUGES,
        inject: [SluiceMetrics, QueueStore, StoreConnection, BacklogService],
        useFactory: (m: SluiceMetrics, queues: QueueStore, connection: StoreConnection, backlog: BacklogService) => {
          if (roles.has('api') || roles.has('worker')) registerQueueMetrics(m.registry, queueSources(queues, connection));
          if (roles.has('api') || roles.has('audit')) registerBacklogMetrics(m.registry, () => backlog.metrics);
          // The audit writer's own series (batch sizes, quarantined entries) are
          // registered by AuditService on METRICS_REGISTRY (src/mirror/mirror-metrics.ts).
          return true;
        },
      },
    ];
    const exported: NonNullable<DynamicModule['exports']> = [SluiceMetrics, METRICS_REGISTRY];
    if (roles.has('worker')) {
      providers.push({
        provide: JobMetrics,
        inject: [SluiceMetrics, HandlerRegistry],
        useFactory: (m: SluiceMetrics, handlers: HandlerRegistry) => new JobMetrics(m.registry, (type) => handlers.map.get(type) !== undefined),
      });
      exported.push(JobMetrics);
    }
    if (roles.has('scheduler')) {
      providers.push({ provide: SchedulerMetrics, inject: [SluiceMetrics], useFactory: (m: SluiceMetrics) => new SchedulerMetrics(m.registry) });
      exported.push(SchedulerMetrics);
    }
    return { module: MetricsModule, controllers: [MetricsController], providers, exports: exported };
  }
}

/** The queue series' reads on the process's store; commands sent while reconnecting would wait in ioredis's offline queue, so they fail at once instead. */
function queueSources(queues: QueueStore, connection: StoreConnection) {
  const ready = () => {
    if (!connection.isReady()) throw new Error(`redis connection is ${connection.state()}`);
  };
  return {
    listQueues: async () => {
      ready();
      return queues.list();
    },
    liveCounts: (q: string) => queues.liveCounts(q),
    oldestWaitingSince: (q: string) => queues.oldestWaitingSince(q),
    redisNowMs: async () => {
      ready();
      return connection.serverTime();
    },
  };
}
