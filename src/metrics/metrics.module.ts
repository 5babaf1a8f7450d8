import { DynamicModule, Global, Module, Provider } from '@nestjs/common';
import type { Registry } from 'prom-client';
import type { Role } from '../config/config';
import { QueueStore, StoreConnection } from '../core/ports';
import { MetricsController } from './metrics.controller';
import { registerQueueMetrics, type QueueSources } from './queue-metrics';
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
 * Global so the role modules inject what they report to:
 * {@link SchedulerMetrics} (scheduler), {@link SluiceMetrics} and
 * {@link METRICS_REGISTRY} (the others register their own series on it).
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
        inject: [SluiceMetrics, QueueStore, StoreConnection],
        useFactory: (m: SluiceMetrics, queues: QueueStore, connection: StoreConnection) => {
          if (roles.has('api') || roles.has('worker')) registerQueueMetrics(m.registry, queueSources(queues, connection), { keySeries: roles.has('api') });
          // Series of other roles are registered by their modules on METRICS_REGISTRY:
          // the backlog (src/mirror/backlog.module.ts), the mirror writer's
          // (src/mirror/mirror-metrics.ts), the worker's (src/workers/runtime/workers.module.ts).
          return true;
        },
      },
    ];
    const exported: NonNullable<DynamicModule['exports']> = [SluiceMetrics, METRICS_REGISTRY];
    if (roles.has('scheduler')) {
      providers.push({ provide: SchedulerMetrics, inject: [SluiceMetrics], useFactory: (m: SluiceMetrics) => new SchedulerMetrics(m.registry) });
      exported.push(SchedulerMetrics);
    }
    return { module: MetricsModule, controllers: [MetricsController], providers, exports: exported };
  }
}

/** The queue series' reads on the process's store; commands sent while reconnecting would wait in ioredis's offline queue, so they fail at once instead. */
export function queueSources(queues: QueueStore, connection: StoreConnection): QueueSources {
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
    topKeys: (q: string, limit: number) => queues.keys(q, limit),
  };
}
