import { Module } from '@nestjs/common';
import { WorkersApiController } from './workers-api.controller';
import { WorkersApiService } from './workers-api.service';

/** HTTP: the worker registry (api role; the worker role itself is src/workers). */
@Module({ controllers: [WorkersApiController], providers: [WorkersApiService], exports: [WorkersApiService] })
export class WorkersApiModule {}
