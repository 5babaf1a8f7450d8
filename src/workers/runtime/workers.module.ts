import { Module } from '@nestjs/common';
import { HandlerRegistry } from '../../handlers/handler-registry';
import { JobMetrics } from '../../metrics/job-metrics';
import { SluiceMetrics } from '../../metrics/sluice-metrics';
import { WorkerService } from './worker.service';

/** The `worker` role, and its series of GET /metrics (jobs started and finished by queue and type). */
@Module({
  providers: [
    WorkerService,
    {
      provide: JobMetrics,
      inject: [SluiceMetrics, HandlerRegistry],
      useFactory: (m: SluiceMetrics, handlers: HandlerRegistry) => new JobMetrics(m.registry, (type) => handlers.map.get(type) !== undefined),
    },
  ],
  exports: [WorkerService],
})
export class WorkersModule {}
