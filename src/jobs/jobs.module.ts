import { Module } from '@nestjs/common';
import { HistoryModule } from '../history/history.module';
import { DlqController } from './dlq.controller';
import { DlqService } from './dlq.service';
import { JobsController } from './jobs.controller';
import { JobsService } from './jobs.service';
import { WaitingCap } from './waiting-cap';

/** HTTP: jobs, their history and the dead-letter queue (api role). */
@Module({ imports: [HistoryModule], controllers: [DlqController, JobsController], providers: [JobsService, DlqService, WaitingCap], exports: [JobsService, WaitingCap] })
export class JobsModule {}
