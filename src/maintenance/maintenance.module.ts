import { Module } from '@nestjs/common';
import { ScheduleModule } from '@nestjs/schedule';
import { MaintenanceService } from './maintenance.service';

/** The `scheduler` role's maintenance loops (cron schedules: src/schedules/scheduler-runner.module.ts). */
@Module({ imports: [ScheduleModule.forRoot()], providers: [MaintenanceService], exports: [MaintenanceService] })
export class MaintenanceModule {}
