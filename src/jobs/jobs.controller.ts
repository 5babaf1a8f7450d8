import { Body, Controller, Delete, Get, HttpCode, Param, Post, Query, Req, Res, UseInterceptors } from '@nestjs/common';
import { Access } from '../http/access.decorator';
import { Audited, NotAudited } from '../http/audited.decorator';
import { LargeAnswerInterceptor, turnForLargeBody } from '../http/large-answer';
import { ApiBody, ApiOperation, ApiTags } from '@nestjs/swagger';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { principalOf } from '../auth/principal';
import { ApiAnswer, ApiErrors, ApiPreferMinimal, ApiTraceHeaders, schemaRef } from '../http/openapi/decorators';
import { ApiJob, toApiJob } from '../http/api-job';
import { EnqueueBatchBody, EnqueueBatchPipe, EnqueueJobBody, EnqueueJobPipe } from './dto/enqueue-body.pipe';
import { EnqueueBatchDto, EnqueueJobDto } from './dto/enqueue-job.dto';
import { ListJobsQueryDto } from './dto/list-jobs.dto';
import { ApiJobEvent, ApiJobExecution, ApiJobLogLine, toApiEvent, toApiExecution, toApiLog } from './history-view';
import { JobsService } from './jobs.service';
import { beginEnqueue, spanEnqueue } from '../telemetry/enqueue-trace';
import { applyMinimal, type MinimalJob } from '../http/prefer';

/**
 * API.md "Jobs": enqueue, read, list, history, cancel; each in the
 * principal's project only (another project's job id → 404). The dead-letter routes
 * live in DlqController; `/jobs/dlq...` is never taken as an id (Fastify's
 * router prefers a static segment to `:id`, whatever the declaration order).
 */
@ApiTags('jobs')
@Controller('jobs')
export class JobsController {
  constructor(private readonly jobs: JobsService) {}

  /**
   * 201 with the new job; 200 with the existing job and
   * `Idempotent-Replayed: true` when its idempotency key matched; 200 with
   * the updated job and `Sluice-Debounced: true` when its debounce key
   * matched a job not claimed yet (API.md v1.2). With `Prefer:
   * return=minimal` the job is `{id, status}` and `Preference-Applied:
   * return=minimal` is set (API.md v1.3); status codes and headers as without.
   */
  @Post()
  @Access('producer')
  @NotAudited('enqueue: in the job history already, and the hot path')
  @ApiOperation({ operationId: 'enqueueJob', summary: 'Enqueue a job' })
  @ApiAnswer(201, { anyOf: [schemaRef('Job'), schemaRef('MinimalJob')] }, 'The new job (with `Prefer: return=minimal`: its id and status).', ['Preference-Applied'])
  @ApiAnswer(
    200,
    { anyOf: [schemaRef('Job'), schemaRef('MinimalJob')] },
    'Either the idempotency key matched a job enqueued with the same body: that job (`Idempotent-Replayed: true`); or the debounce key matched a job of the queue not claimed yet: that job, updated with this body and its runAt moved (`Sluice-Debounced: true`).',
    ['Idempotent-Replayed', 'Sluice-Debounced', 'Preference-Applied'],
  )
  @ApiErrors([409, 'The idempotency key was used with a different body (code conflict).'])
  @ApiBody({ type: EnqueueJobDto })
  @ApiTraceHeaders()
  @ApiPreferMinimal()
  async create(@Body(EnqueueJobPipe) body: EnqueueJobBody, @Res({ passthrough: true }) reply: FastifyReply, @Req() req: FastifyRequest): Promise<ApiJob | MinimalJob> {
    const trace = beginEnqueue(req.headers, false);
    const pending = this.jobs.enqueue([body], false, principalOf(req).project, trace?.carry);
    const [r] = await (trace?.span ? spanEnqueue(trace, pending) : pending);
    if (r.replayed) void reply.status(200).header('idempotent-replayed', 'true');
    else if (r.debounced) void reply.status(200).header('sluice-debounced', 'true');
    else void reply.status(201);
    return applyMinimal(req, reply) ? { id: r.job.id, status: r.job.status } : toApiJob(r.job);
  }

  /**
   * 201 `{jobs: [job...]}` in input order; all validated before any is enqueued.
   * With `Prefer: return=minimal`: `{jobs: [{id, status}...]}` and `Preference-Applied: return=minimal`.
   */
  @Post('batch')
  @Access('producer')
  @NotAudited('enqueue: in the job history already, and the hot path')
  @HttpCode(201)
  @ApiOperation({ operationId: 'enqueueJobs', summary: 'Enqueue 1..1000 jobs (atomic per queue)' })
  @ApiAnswer(201, { anyOf: [schemaRef('JobBatch'), schemaRef('MinimalJobBatch')] }, 'The jobs, in input order (with `Prefer: return=minimal`: their ids and statuses).', ['Preference-Applied'])
  @ApiErrors([409, 'An idempotency key was used with a different body (code conflict).'])
  @ApiBody({ type: EnqueueBatchDto })
  @ApiTraceHeaders()
  @ApiPreferMinimal()
  @UseInterceptors(LargeAnswerInterceptor)
  async createBatch(
    @Body(EnqueueBatchPipe) body: EnqueueBatchBody,
    @Req() req: FastifyRequest,
    @Res({ passthrough: true }) reply: FastifyReply,
  ): Promise<{ jobs: ApiJob[] | MinimalJob[] }> {
    await turnForLargeBody(req);
    const trace = beginEnqueue(req.headers, true);
    const pending = this.jobs.enqueue(body.jobs, true, principalOf(req).project, trace?.carry);
    const out = await (trace?.span ? spanEnqueue(trace, pending) : pending);
    if (applyMinimal(req, reply)) return { jobs: out.map((r) => ({ id: r.job.id, status: r.job.status })) };
    return { jobs: out.map((r) => toApiJob(r.job)) };
  }

  /** 200 `{items, nextCursor}`: newest first, keyset pagination; 400 names a bad status/limit/cursor. */
  @Get()
  @Access('viewer', 'producer')
  @ApiOperation({ operationId: 'listJobs', summary: 'List jobs from PostgreSQL, newest first (keyset pagination); from/to on created time; payload containment within from..to' })
  @ApiAnswer(200, 'JobPage', 'One page, newest first.')
  async list(@Query() q: ListJobsQueryDto, @Req() req: FastifyRequest): Promise<{ items: ApiJob[]; nextCursor: string | null }> {
    const page = await this.jobs.list(
      { queue: q.queue, status: q.status, type: q.type, flowId: q.flowId, cursor: q.cursor, limit: q.limit, from: q.from, to: q.to, payload: q.payload },
      principalOf(req).project,
    );
    return { items: page.items.map(toApiJob), nextCursor: page.nextCursor };
  }

  @Get(':id')
  @Access('viewer', 'producer')
  @ApiOperation({ operationId: 'getJob', summary: 'A job by id (Redis while live, PostgreSQL after)' })
  @ApiAnswer(200, 'Job', 'The job.')
  async get(@Param('id') id: string, @Req() req: FastifyRequest): Promise<ApiJob> {
    return toApiJob(await this.jobs.get(id, principalOf(req).project));
  }

  @Get(':id/events')
  @Access('viewer', 'producer')
  @ApiOperation({ operationId: 'listJobEvents', summary: "A job's audit trail, oldest first" })
  @ApiAnswer(200, 'JobEvents', 'The events, oldest first.')
  async events(@Param('id') id: string, @Req() req: FastifyRequest): Promise<{ items: ApiJobEvent[] }> {
    return { items: (await this.jobs.events(id, principalOf(req).project)).map(toApiEvent) };
  }

  @Get(':id/executions')
  @Access('viewer', 'producer')
  @ApiOperation({ operationId: 'listJobExecutions', summary: 'One row per execution started' })
  @ApiAnswer(200, 'JobExecutions', 'The executions, in run order.')
  async executions(@Param('id') id: string, @Req() req: FastifyRequest): Promise<{ items: ApiJobExecution[] }> {
    return { items: (await this.jobs.executions(id, principalOf(req).project)).map(toApiExecution) };
  }

  @Get(':id/logs')
  @Access('viewer', 'producer')
  @ApiOperation({ operationId: 'listJobLogs', summary: 'Lines the handler logged, oldest first' })
  @ApiAnswer(200, 'JobLogs', 'The log lines, oldest first.')
  async logs(@Param('id') id: string, @Req() req: FastifyRequest): Promise<{ items: ApiJobLogLine[] }> {
    return { items: (await this.jobs.logs(id, principalOf(req).project)).map(toApiLog) };
  }

  /**
   * Cancel: 200 with the job `cancelled` (was waiting/delayed/blocked); 202 with the
   * job still `active` and `cancelRequested: true` (its AbortSignal fires, it
   * ends cancelled); 409 when terminal; 404 when unknown.
   */
  @Delete(':id')
  @Access('operator')
  @Audited('job.cancel', { param: 'id' })
  @ApiOperation({ operationId: 'cancelJob', summary: 'Cancel a job (202 while an active one is being aborted)' })
  @ApiAnswer(200, 'Job', 'The job was waiting, delayed or blocked (a flow job): now cancelled.')
  @ApiAnswer(202, 'Job', 'The job is active: still active with cancelRequested true; its AbortSignal fires and it ends cancelled.')
  @ApiErrors([409, 'The job is already terminal (code conflict).'])
  async cancel(@Param('id') id: string, @Res({ passthrough: true }) reply: FastifyReply, @Req() req: FastifyRequest): Promise<ApiJob> {
    const r = await this.jobs.cancel(id, principalOf(req).project);
    void reply.status(r.requested ? 202 : 200);
    return toApiJob(r.job);
  }
}
