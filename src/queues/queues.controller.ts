import { Body, Controller, Delete, Get, HttpCode, Param, Post, Put, Query, Req } from '@nestjs/common';
import type { FastifyRequest } from 'fastify';
import { principalOf } from '../auth/principal';
import { Access } from '../http/access.decorator';
import { Audited } from '../http/audited.decorator';
import { ApiOperation, ApiTags } from '@nestjs/swagger';
import { ApiAnswer } from '../http/openapi/decorators';
import { ConfigureQueueDto } from './dto/configure-queue.dto';
import { KeyOverrideDto, QueueKeysQueryDto } from './dto/queue-keys.dto';
import { ApiQueueKey, QueueKeysService } from './queue-keys.service';
import { ApiQueue, QueuesService } from './queues.service';

/**
 * API.md "Queues": list, read, configure, pause and resume, and the keys of
 * a queue (v1.1/v1.2 "Flow control per key"); the principal's project's queues only.
 */
@ApiTags('queues')
@Controller('queues')
export class QueuesController {
  constructor(
    private readonly queues: QueuesService,
    private readonly keys: QueueKeysService,
  ) {}

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

  @Get(':name/keys')
  @Access('viewer')
  @ApiOperation({
    operationId: 'listQueueKeys',
    summary: 'The busiest concurrency keys of a queue, with their overrides and the limits in force',
    description:
      'Keys by waiting + active jobs, busiest first, then keys that only have an override. `limits` is what applies to the key: its override where set, else the queue\'s keyConcurrency / keyRateLimit.',
  })
  @ApiAnswer(200, 'QueueKeys', 'At most `limit` keys, busiest first.')
  async listKeys(@Param('name') name: string, @Query() q: QueueKeysQueryDto, @Req() req: FastifyRequest): Promise<{ items: ApiQueueKey[] }> {
    return { items: await this.keys.list(name, principalOf(req).project, q.limit) };
  }

  @Put(':name/keys/:key')
  @Access('operator')
  @Audited('queue.set_key_override', { params: ['name', 'key'] })
  @ApiOperation({
    operationId: 'setQueueKeyOverride',
    summary: "Override the queue's per-key limits for one key (only the fields sent change; null removes one)",
    description: 'The key is the path segment after URL decoding (1..128 characters; encode `/` as %2F). The queue must exist (404 otherwise); the key need not have jobs yet.',
  })
  @ApiAnswer(200, 'QueueKey', 'The key with its override and the limits now in force.')
  setKeyOverride(@Param('name') name: string, @Param('key') key: string, @Body() body: KeyOverrideDto, @Req() req: FastifyRequest): Promise<ApiQueueKey> {
    const b = body ?? {};
    const change = {
      ...(b.concurrency !== undefined ? { concurrency: b.concurrency } : {}),
      ...(b.rateLimit !== undefined ? { rateLimit: b.rateLimit === null ? null : { max: b.rateLimit.max, durationMs: b.rateLimit.durationMs } } : {}),
    };
    return this.keys.setOverride(name, key, change, principalOf(req).project);
  }

  @Delete(':name/keys/:key')
  @Access('operator')
  @Audited('queue.delete_key_override', { params: ['name', 'key'] })
  @ApiOperation({ operationId: 'deleteQueueKeyOverride', summary: "Remove one key's override: the queue's per-key limits apply to it again (idempotent)" })
  @ApiAnswer(200, 'QueueKey', 'The key, overrides null.')
  deleteKeyOverride(@Param('name') name: string, @Param('key') key: string, @Req() req: FastifyRequest): Promise<ApiQueueKey> {
    return this.keys.deleteOverride(name, key, principalOf(req).project);
  }
}
