import { Module } from '@nestjs/common';
import { WorkersApiController } from './workers.controller';
import { WorkersApiService } from './workers.service';

/** HTTP: the worker registry (api role; the worker role itself is src/workers). */
@Module({ controllers: [WorkersApiController], providers: [WorkersApiService], exports: [WorkersApiService] })
export class WorkersApiModule {}
