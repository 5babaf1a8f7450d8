import { Module } from '@nestjs/common';
import { HistoryModule } from '../history/history.module';
import { WorkersApiModule } from '../workers/registry/registry.module';
import { DashboardController } from './dashboard.controller';
import { DashboardService } from './dashboard.service';
import { LiveHub } from './live/live-hub';

/** HTTP: the dashboard page and its JSON feeds (api role). */
@Module({ imports: [HistoryModule, WorkersApiModule], controllers: [DashboardController], providers: [DashboardService, LiveHub] })
export class DashboardModule {}
