import { Controller, Get } from '@nestjs/common';
import { Access } from '../auth/access.decorator';
import { ApiOperation, ApiTags } from '@nestjs/swagger';
import { ApiAnswer } from '../http/openapi/decorators';
import { ApiWorker, WorkersApiService } from './workers-api.service';

/** API.md `GET /workers`. */
@ApiTags('workers')
@Controller('workers')
export class WorkersApiController {
  constructor(private readonly workers: WorkersApiService) {}

  @Get()
  @Access('viewer')
  @ApiOperation({ operationId: 'listWorkers', summary: 'Registered worker processes: running, draining or dead (missed heartbeats)' })
  @ApiAnswer(200, ['Worker'], 'Every registered worker, oldest heartbeat first.')
  list(): Promise<ApiWorker[]> {
    return this.workers.list();
  }
}
