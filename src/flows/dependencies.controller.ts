import { Controller, Get, Param, Req } from '@nestjs/common';
import { ApiOperation, ApiTags } from '@nestjs/swagger';
import type { FastifyRequest } from 'fastify';
import { principalOf } from '../auth/principal';
import { Access } from '../http/access.decorator';
import { ApiAnswer } from '../http/openapi/decorators';
import { DependencyView, FlowViewService } from './flow-view.service';

/** `GET /jobs/:id/dependencies` (API.md v1.2 "Workflows"): a flow job's dependencies with their results. */
@ApiTags('jobs')
@Controller('jobs')
export class JobDependenciesController {
  constructor(private readonly view: FlowViewService) {}

  @Get(':id/dependencies')
  @Access('viewer', 'producer')
  @ApiOperation({ operationId: 'listJobDependencies', summary: "A flow job's dependencies: status, result, last error (empty for a job outside a flow)" })
  @ApiAnswer(200, 'JobDependencies', 'Its dependencies, in the order it named them.')
  async dependencies(@Param('id') id: string, @Req() req: FastifyRequest): Promise<{ items: DependencyView[] }> {
    return { items: await this.view.dependencies(id, principalOf(req).project) };
  }
}
