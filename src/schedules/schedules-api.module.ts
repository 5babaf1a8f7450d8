import { Module } from '@nestjs/common';
import { PostgresModule } from '../postgres/postgres.module';
import { systemClock } from '../core/ports';
import { SCHEDULE_CLOCK } from './schedule-clock';
import { SchedulesController } from './schedules.controller';
import { SchedulesService } from './schedules.service';

/** HTTP: `/schedules` (api role). Schedules live in PostgreSQL. */
@Module({
  imports: [PostgresModule],
  controllers: [SchedulesController],
  providers: [SchedulesService, { provide: SCHEDULE_CLOCK, useValue: systemClock }],
  exports: [SchedulesService],
})
export class SchedulesApiModule {}
