import { Global, Module } from '@nestjs/common';
import { BacklogService } from '../audit/backlog.module';
import { RedisJobStore } from '../redis/redis-job-store';
import { MetricsController } from './metrics.controller';
import { SluiceMetrics } from './sluice-metrics';

/**
 * `GET /metrics` and the {@link SluiceMetrics} of this app instance (api
 * role). Global so the worker role of the same process (ROLE=all) can report
 * its attempts to it; a process without the api role serves no metrics.
 */
@Global()
@Module({
  controllers: [MetricsController],
  providers: [
    {
      provide: SluiceMetrics,
      inject: [RedisJobStore, BacklogService],
      useFactory: (store: RedisJobStore, backlog: BacklogService) =>
        new SluiceMetrics({
          listQueues: () => {
            // Commands sent while reconnecting would wait in ioredis's offline queue.
            if (store.redis.status !== 'ready') return Promise.reject(new Error(`redis connection is ${store.redis.status}`));
            return store.listQueues();
          },
          liveCounts: (q) => store.liveCounts(q),
          backlog: () => backlog.metrics,
        }),
    },
  ],
  exports: [SluiceMetrics],
})
export class MetricsModule {}
