import { Body, Controller, Delete, Get, HttpCode, Param, Post, Req, Res, UseInterceptors } from '@nestjs/common';
import { ApiBody, ApiOperation, ApiTags } from '@nestjs/swagger';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { principalOf } from '../auth/principal';
import { Access } from '../http/access.decorator';
import { ApiJob, toApiJob } from '../http/api-job';
import { Audited, NotAudited } from '../http/audited.decorator';
import { LargeAnswerInterceptor, turnForLargeBody } from '../http/large-answer';
import { ApiAnswer, ApiErrors, ApiTraceHeaders } from '../http/openapi/decorators';
import { adviseRetry } from '../http/request-notes';
import { beginEnqueue, spanEnqueue } from '../telemetry/enqueue-trace';
import { CreateFlowDto } from './dto/create-flow.dto';
import { CreateFlowBody, CreateFlowPipe } from './dto/create-flow.pipe';
import { flowRetryAdvice } from './flow-failure';
import { FlowView, FlowViewService } from './flow-view.service';
import { FlowsService } from './flows.service';

/**
 * API.md v1.2 "Workflows": submit a flow, read it, cancel it; each in the
 * principal's project only (another project's flow → 404).
 */
@ApiTags('flows')
@Controller('flows')
export class FlowsController {
  constructor(
    private readonly flows: FlowsService,
    private readonly view: FlowViewService,
  ) {}

  /**
   * 201 `{flowId, jobs}` in request order; all or nothing (FlowsService); 200
   * with `Idempotent-Replayed: true` when its idempotencyKey names a flow
   * submitted with the same body.
   */
  @Post()
  @Access('producer')
  @NotAudited('enqueue: in the job history already, like POST /jobs/batch')
  @HttpCode(201)
  @ApiOperation({ operationId: 'createFlow', summary: 'Submit a flow: 1..1000 jobs with dependencies between them (a DAG), all or nothing' })
  @ApiAnswer(201, 'FlowCreated', 'The flow: its jobs in request order, the roots waiting (or delayed), the others blocked.')
  @ApiAnswer(200, 'FlowCreated', 'The idempotencyKey names a flow submitted with the same body: that flow, each job as it is now (`Idempotent-Replayed: true`).', ['Idempotent-Replayed'])
  @ApiErrors(
    [409, 'The idempotencyKey was used with a different body (code conflict).'],
    [503, 'The store failed after the flow was recorded (rolled back; the message says whether any of it may exist), or the idempotencyKey names a flow not completely submitted yet. `details` holds `{"path": "flowId", "message": <id>}` once a flow id was assigned.'],
  )
  @ApiBody({ type: CreateFlowDto })
  @ApiTraceHeaders()
  @UseInterceptors(LargeAnswerInterceptor)
  async create(
    @Body(CreateFlowPipe) body: CreateFlowBody,
    @Req() req: FastifyRequest,
    @Res({ passthrough: true }) reply: FastifyReply,
  ): Promise<{ flowId: string; jobs: (ApiJob & { ref: string; dependsOn: string[] })[] }> {
    await turnForLargeBody(req);
    const trace = beginEnqueue(req.headers, true);
    const keyed = body.idempotencyKey !== undefined;
    // From here an answer-deadline 503 names the flow and says it may exist.
    const pending = this.flows.create(body, principalOf(req).project, trace?.carry, (flowId) => adviseRetry(req, flowRetryAdvice(flowId, keyed)));
    const out = trace?.span ? await spanFlow(trace, pending) : await pending;
    if (out.replayed) void reply.status(200).header('idempotent-replayed', 'true');
    return { flowId: out.flowId, jobs: out.jobs.map((j) => ({ ...toApiJob(j.job), ref: j.ref, dependsOn: j.dependsOn })) };
  }

  @Get(':id')
  @Access('viewer', 'producer')
  @ApiOperation({ operationId: 'getFlow', summary: "A flow: its status, counts per status and each job's status" })
  @ApiAnswer(200, 'Flow', 'The flow.')
  get(@Param('id') id: string, @Req() req: FastifyRequest): Promise<FlowView> {
    return this.view.get(id, principalOf(req).project);
  }

  /** 200 with the flow after the cancellations (active jobs still active, their cancel requested). */
  @Delete(':id')
  @Access('operator')
  @Audited('flow.cancel', { param: 'id' })
  @ApiOperation({ operationId: 'cancelFlow', summary: 'Cancel every job of a flow that has not finished' })
  @ApiAnswer(200, 'Flow', 'The flow after the cancellations: blocked, waiting and delayed jobs cancelled; active ones still active with their cancel requested (they end cancelled).')
  cancel(@Param('id') id: string, @Req() req: FastifyRequest): Promise<FlowView> {
    return this.view.cancel(id, principalOf(req).project);
  }
}

/** The enqueue span (src/telemetry/enqueue-trace.ts) around a flow's submission. */
async function spanFlow<T extends { jobs: { job: { id: string; queue: string } }[] }>(trace: Parameters<typeof spanEnqueue>[0], pending: Promise<T>): Promise<T> {
  let out: T | undefined;
  await spanEnqueue(trace, pending.then((r) => ((out = r), r.jobs)));
  return out as T;
}
