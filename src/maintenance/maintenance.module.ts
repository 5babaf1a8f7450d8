import { Module } from '@nestjs/common';
import { ScheduleModule } from '@nestjs/schedule';
import { MaintenanceService } from './maintenance.service';
import { Summarizer } from './summarizer';

/** The `scheduler` role's maintenance loops (cron schedules: src/schedules/scheduler-runner.module.ts), and the failure summaries' model calls. */
@Module({ imports: [ScheduleModule.forRoot()], providers: [MaintenanceService, Summarizer], exports: [MaintenanceService, Summarizer] })
export class MaintenanceModule {}
