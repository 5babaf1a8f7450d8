import { Module } from '@nestjs/common';
import { HistoryModule } from '../history/history.module';
import { JobsModule } from '../jobs/jobs.module';
import { JobDependenciesController } from './dependencies.controller';
import { FlowViewService } from './flow-view.service';
import { FlowsController } from './flows.controller';
import { FlowsService } from './flows.service';

/** HTTP: workflows (API.md v1.2), api role. The flow worker itself runs in the scheduler role (MaintenanceModule). */
@Module({ imports: [HistoryModule, JobsModule], controllers: [FlowsController, JobDependenciesController], providers: [FlowsService, FlowViewService] })
export class FlowsModule {}
