import { Module } from '@nestjs/common';
import { PostgresModule } from '../postgres/postgres.module';
import { systemClock } from '../core/ports';
import { SCHEDULE_CLOCK } from './schedule-clock';
import { SchedulerRunnerService } from './scheduler-runner.service';

/** The cron materializer of the `scheduler` role (schedules are read from PostgreSQL). */
@Module({
  imports: [PostgresModule],
  providers: [SchedulerRunnerService, { provide: SCHEDULE_CLOCK, useValue: systemClock }],
  exports: [SchedulerRunnerService],
})
export class SchedulerRunnerModule {}
