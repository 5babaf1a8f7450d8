import { Module } from '@nestjs/common';
import { WorkerService } from './worker.service';

/** The `worker` role. */
@Module({ providers: [WorkerService], exports: [WorkerService] })
export class WorkersModule {}
