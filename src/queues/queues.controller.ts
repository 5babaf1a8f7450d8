import { Body, Controller, Get, HttpCode, Param, Post, Put, Req } from '@nestjs/common';
import type { FastifyRequest } from 'fastify';
import { principalOf } from '../auth/principal';
import { Access } from '../http/access.decorator';
import { Audited } from '../http/audited.decorator';
import { ApiOperation, ApiTags } from '@nestjs/swagger';
import { ApiAnswer } from '../http/openapi/decorators';
import { ConfigureQueueDto } from './dto/configure-queue.dto';
import { ApiQueue, QueuesService } from './queues.service';

/** API.md "Queues": list, read, configure, pause and resume; the principal's project's queues only. */
@ApiTags('queues')
@Controller('queues')
export class QueuesController {
  constructor(private readonly queues: QueuesService) {}

  @Get()
  @Access('viewer')
  @ApiOperation({ operationId: 'listQueues', summary: 'Every queue with its settings and exact counts' })
  @ApiAnswer(200, ['Queue'], 'Every queue, by name.')
  list(@Req() req: FastifyRequest): Promise<ApiQueue[]> {
    return this.queues.list(principalOf(req).project);
  }

  @Get(':name')
  @Access('viewer')
  @ApiOperation({ operationId: 'getQueue', summary: 'One queue; 404 unless configured, paused or given a job' })
  @ApiAnswer(200, 'Queue', 'The queue.')
  get(@Param('name') name: string, @Req() req: FastifyRequest): Promise<ApiQueue> {
    return this.queues.get(name, principalOf(req).project);
  }

  @Put(':name')
  @Access('operator')
  @Audited('queue.configure', { param: 'name' })
  @ApiOperation({ operationId: 'configureQueue', summary: 'Configure a queue (creates it if new); only the fields sent change' })
  @ApiAnswer(200, 'Queue', 'The queue with its new settings.')
  configure(@Param('name') name: string, @Body() body: ConfigureQueueDto, @Req() req: FastifyRequest): Promise<ApiQueue> {
    return this.queues.configure(name, body ?? {}, principalOf(req).project);
  }

  @Post(':name/pause')
  @Access('operator')
  @Audited('queue.pause', { param: 'name' })
  @HttpCode(200)
  @ApiOperation({ operationId: 'pauseQueue', summary: 'Pause: no job of the queue starts (active ones finish); creates the queue if new' })
  @ApiAnswer(200, 'Queue', 'The queue, paused.')
  pause(@Param('name') name: string, @Req() req: FastifyRequest): Promise<ApiQueue> {
    return this.queues.setPaused(name, true, principalOf(req).project);
  }

  @Post(':name/resume')
  @Access('operator')
  @Audited('queue.resume', { param: 'name' })
  @HttpCode(200)
  @ApiOperation({ operationId: 'resumeQueue', summary: 'Resume a paused queue' })
  @ApiAnswer(200, 'Queue', 'The queue, running.')
  resume(@Param('name') name: string, @Req() req: FastifyRequest): Promise<ApiQueue> {
    return this.queues.setPaused(name, false, principalOf(req).project);
  }
}
