import { Module } from '@nestjs/common';
import { HistoryModule } from '../history/history.module';
import { QueuesController } from './queues.controller';
import { QueuesService } from './queues.service';

/** HTTP: queues (api role). */
@Module({ imports: [HistoryModule], controllers: [QueuesController], providers: [QueuesService], exports: [QueuesService] })
export class QueuesModule {}
