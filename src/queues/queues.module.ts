import { Module } from '@nestjs/common';
import { HistoryModule } from '../history/history.module';
import { QueuesController } from './queues.controller';
import { QueueKeysService } from './queue-keys.service';
import { QueuesService } from './queues.service';

/** HTTP: queues (api role). */
@Module({ imports: [HistoryModule], controllers: [QueuesController], providers: [QueuesService, QueueKeysService], exports: [QueuesService] })
export class QueuesModule {}
