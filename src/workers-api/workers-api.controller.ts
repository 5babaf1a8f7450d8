import { Controller, Get } from '@nestjs/common';
import { Access } from '../auth/access.decorator';
import { ApiOperation, ApiTags } from '@nestjs/swagger';
import { ApiWorker, WorkersApiService } from './workers-api.service';

/** API.md `GET /workers`. */
@ApiTags('workers')
@Controller('workers')
export class WorkersApiController {
  constructor(private readonly workers: WorkersApiService) {}

  @Get()
  @Access('viewer')
  @ApiOperation({ summary: 'Registered worker processes: running, draining or dead (missed heartbeats)' })
  list(): Promise<ApiWorker[]> {
    return this.workers.list();
  }
}
