import { BeforeApplicationShutdown, DynamicModule, Injectable, Module, Optional } from '@nestjs/common';
import type { SluiceConfig } from './config/config';
import { PostgresModule } from './postgres/postgres.module';
import { MirrorModule } from './mirror/mirror.module';
import { MirrorService } from './mirror/mirror.service';
import { AuthModule } from './auth/auth.module';
import { KeysApiModule } from './auth/keys-api.module';
import { UsersApiModule } from './auth/users-api.module';
import { BacklogModule } from './mirror/backlog.module';
import { ConfigModule } from './config/config.module';
import { DashboardModule } from './dashboard/dashboard.module';
import { ExternalModule } from './workers/external/external.module';
import { HandlersModule } from './handlers/handlers.module';
import { HealthModule } from './health/health.module';
import { FlowsModule } from './flows/flows.module';
import { JobsModule } from './jobs/jobs.module';
import type { Logger } from './logging/logger';
import { MaintenanceModule } from './maintenance/maintenance.module';
import { MetricsModule } from './metrics/metrics.module';
import { OplogModule } from './oplog/oplog.module';
import { QueuesModule } from './queues/queues.module';
import { RedisModule } from './redis/redis.module';
import { SchedulerRunnerModule } from './schedules/scheduler-runner.module';
import { SchedulesApiModule } from './schedules/schedules-api.module';
import { WorkersApiModule } from './workers/registry/registry.module';
import { WorkerService } from './workers/runtime/worker.service';
import { WorkersModule } from './workers/runtime/workers.module';

/**
 * The shutdown order of a process, written once: on close (SIGTERM/SIGINT in
 * main.ts, or app.close()), the workers of this process drain first (they
 * finish or release their jobs), then the mirror writes what is still in the
 * streams (the events of those jobs) and stops. Each role is optional.
 */
@Injectable()
class ShutdownOrder implements BeforeApplicationShutdown {
  constructor(
    @Optional() private readonly worker?: WorkerService,
    @Optional() private readonly mirror?: MirrorService,
  ) {}

  async beforeApplicationShutdown(): Promise<void> {
    await this.worker?.drain();
    await this.mirror?.drain();
  }
}

/**
 * Composes the modules of the roles named by ROLE. Every process serves the
 * ops controllers (health, metrics); the API controllers exist only with `api`.
 */
@Module({})
export class AppModule {
  static forRoles(config: SluiceConfig, logger: Logger): DynamicModule {
    const imports: DynamicModule['imports'] = [
      ConfigModule.forRoot(config, logger),
      RedisModule,
      // Every role: load shedding guards whichever enqueue the process makes.
      BacklogModule,
      HandlersModule.forRoot({ diagnostics: config.diagnosticHandlers }),
      // Every role: the ops endpoints (/healthz, /readyz, /metrics) and the series of its roles.
      HealthModule,
      MetricsModule.forRoles(config.roles),
      // Every HTTP route of every role goes through its one guard.
      AuthModule,
    ];
    if (config.roles.has('api')) imports.push(PostgresModule, JobsModule, FlowsModule, SchedulesApiModule, QueuesModule, ExternalModule, WorkersApiModule, DashboardModule, KeysApiModule, UsersApiModule, OplogModule);
    if (config.roles.has('worker')) imports.push(WorkersModule);
    if (config.roles.has('scheduler')) imports.push(PostgresModule, MaintenanceModule, SchedulerRunnerModule);
    if (config.roles.has('audit')) imports.push(PostgresModule, MirrorModule);
    return { module: AppModule, imports, providers: [ShutdownOrder] };
  }
}
