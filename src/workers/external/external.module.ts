import { Module } from '@nestjs/common';
import { HistoryModule } from '../../history/history.module';
import { ClaimController } from './claim.controller';
import { ExternalService } from './external.service';
import { LeasesController } from './leases.controller';

/** HTTP: the external worker protocol (api role). */
@Module({ imports: [HistoryModule], controllers: [ClaimController, LeasesController], providers: [ExternalService] })
export class ExternalModule {}
