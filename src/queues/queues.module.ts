import { Module } from '@nestjs/common';
import { HistoryModule } from '../history/history.module';
import { QueuesController } from './queues.controller';
import { QueueKeysService } from './queue-keys.service';
import { QueuesService } from './queues.service';
import { SettingsKeeper } from './settings-keeper';
import { QueueStore } from '../core/ports';
import { POSTGRES_DB } from '../postgres/postgres.module';
import { LOGGER } from '../config/config.module';
import type { DataSource } from 'typeorm';
import type { Logger } from '../logging/logger';

/** HTTP: queues (api role). */
@Module({
  imports: [HistoryModule],
  controllers: [QueuesController],
  providers: [
    QueuesService,
    QueueKeysService,
    {
      provide: SettingsKeeper,
      inject: [QueueStore, LOGGER, { token: POSTGRES_DB, optional: true }],
      useFactory: (store: QueueStore, log: Logger, db?: DataSource) => new SettingsKeeper(db ?? null, store, log.child({ component: 'queue-settings' })),
    },
  ],
  exports: [QueuesService],
})
export class QueuesModule {}
