import { Module } from '@nestjs/common';
import { HistoryModule } from '../audit/history.module';
import { JobsController } from './jobs.controller';
import { JobsService } from './jobs.service';

/** HTTP: jobs, their history and the dead-letter queue (api role). */
@Module({ imports: [HistoryModule], controllers: [JobsController], providers: [JobsService], exports: [JobsService] })
export class JobsModule {}
