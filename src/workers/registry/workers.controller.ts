import { Controller, Get, Req } from '@nestjs/common';
import type { FastifyRequest } from 'fastify';
import { principalOf } from '../../auth/principal';
import { Access } from '../../http/access.decorator';
import { ApiOperation, ApiTags } from '@nestjs/swagger';
import { ApiAnswer } from '../../http/openapi/decorators';
import { ApiWorker, WorkersApiService } from './workers.service';

/** API.md `GET /workers`. */
@ApiTags('workers')
@Controller('workers')
export class WorkersApiController {
  constructor(private readonly workers: WorkersApiService) {}

  @Get()
  @Access('viewer')
  @ApiOperation({ operationId: 'listWorkers', summary: 'Workers: in-process ones (kind "process": running, draining or dead after missed heartbeats) and external ones seen claiming (kind "external"), each with the ids of the jobs it holds (≤ 100)' })
  @ApiAnswer(200, ['Worker'], 'Every registered worker, oldest heartbeat first.')
  list(@Req() req: FastifyRequest): Promise<ApiWorker[]> {
    return this.workers.list(principalOf(req).project, { held: true });
  }
}
