import { Body, Controller, Delete, Get, HttpCode, Param, Post, Query, Req, Res } from '@nestjs/common';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { principalOf } from '../auth/principal';
import { iso } from '../http/api-job';
import { Access } from '../http/access.decorator';
import { Audited } from '../http/audited.decorator';
import { ApiOperation, ApiTags } from '@nestjs/swagger';
import type { Json } from '../core/job';
import { ApiAnswer, ApiErrors } from '../http/openapi/decorators';
import { ApiJob, toApiJob } from '../http/api-job';
import { DlqGroupsQueryDto, PurgeDlqQueryDto, RetryDlqDto, RetryJobDto } from './dto/dlq.dto';
import { ListDlqQueryDto } from './dto/list-jobs.dto';
import { DlqService, GroupSummary } from './dlq.service';
import type { DlqGroup } from '../history';

/** A group's summary as the API renders it (times ISO). */
type ApiGroupSummary = Omit<GroupSummary, 'firstAt' | 'lastAt' | 'generatedAt'> & { firstAt: string; lastAt: string; generatedAt?: string };

/** A dead-letter group as the API renders it (times ISO, queues by bare name). */
type ApiDlqGroup = Omit<DlqGroup, 'firstAt' | 'lastAt'> & { firstAt: string; lastAt: string; summary: ApiGroupSummary };

/** A summary with its times as ISO strings. */
export function toApiSummary(s: GroupSummary): ApiGroupSummary {
  const out: ApiGroupSummary = { ...s, firstAt: iso(s.firstAt) as string, lastAt: iso(s.lastAt) as string } as ApiGroupSummary;
  if (s.kind === 'model') out.generatedAt = iso(s.generatedAt) as string;
  return out;
}

/** API.md "Dead-letter queue" and v1.1 "Dead-letter groups": the principal's project's only (another project's job id → 404). */
@ApiTags('dead-letter queue')
@Controller('jobs')
export class DlqController {
  constructor(private readonly dlq: DlqService) {}

  /** 200 `{items, nextCursor}`: failed jobs with `lastError`, newest failure first. */
  @Get('dlq/all')
  @Access('viewer', 'producer')
  @ApiOperation({ operationId: 'listDeadLetterJobs', summary: 'List the dead-letter queue (keyset pagination)' })
  @ApiAnswer(200, 'JobPage', 'One page of failed jobs, newest failure first.')
  async list(@Query() q: ListDlqQueryDto, @Req() req: FastifyRequest): Promise<{ items: ApiJob[]; nextCursor: string | null }> {
    const page = await this.dlq.list({ queue: q.queue, type: q.type, fingerprint: q.fingerprint, cursor: q.cursor, limit: q.limit }, principalOf(req).project);
    return { items: page.items.map(toApiJob), nextCursor: page.nextCursor };
  }

  /** 200 `{items: [{fingerprint, sample, count, types, queues, firstAt, lastAt, summary}]}`, largest group first (API.md v1.1, v1.3 "Failure summaries"). */
  @Get('dlq/groups')
  @Access('viewer', 'producer')
  @ApiOperation({ operationId: 'listDeadLetterGroups', summary: 'The dead-letter queue grouped by error fingerprint (one cause per group), largest first' })
  @ApiAnswer(200, 'DlqGroups', "The project's dead-letter groups, largest first.")
  async groups(@Query() q: DlqGroupsQueryDto, @Req() req: FastifyRequest): Promise<{ items: ApiDlqGroup[] }> {
    const groups = await this.dlq.groups(principalOf(req).project, { queue: q.queue, limit: q.limit });
    return { items: groups.map((g) => ({ ...g, firstAt: iso(g.firstAt) as string, lastAt: iso(g.lastAt) as string, summary: toApiSummary(g.summary) })) };
  }

  /**
   * `POST /jobs/dlq/groups/:fingerprint/summary` (API.md v1.3 "Failure summaries"): 202 `{fingerprint, queued: true,
   * summary}` — the scheduler role asks the model again at its next pass; 200 with `queued: false` when no model is
   * configured. 400 malformed fingerprint, 404 no such group in the project. Operator; recorded in the operator log.
   */
  @Post('dlq/groups/:fingerprint/summary')
  @Access('operator')
  @Audited('dlq.summarize', { param: 'fingerprint' })
  @HttpCode(202)
  @ApiOperation({
    operationId: 'summarizeDeadLetterGroup',
    summary: "Summarize a dead-letter group again with the model (SUMMARY_MODEL_URL), off the request path",
    description: 'Takes no body. The scheduler role makes the call at its next pass (SUMMARY_INTERVAL_MS), within SUMMARY_MAX_PER_HOUR; until then, and when the call fails, the group keeps its current summary. docs/failure-summaries.md.',
  })
  @ApiAnswer(202, 'SummaryRequest', 'Queued: the model summarizes the group again at the next pass.')
  @ApiAnswer(200, 'SummaryRequest', 'No model is configured (queued false): the rules summary, always current.')
  async summarize(@Param('fingerprint') fingerprint: string, @Req() req: FastifyRequest, @Res({ passthrough: true }) res: FastifyReply): Promise<{ fingerprint: string; queued: boolean; summary: ApiGroupSummary }> {
    const r = await this.dlq.summarizeAgain(principalOf(req).project, fingerprint);
    if (!r.queued) res.status(200);
    return { ...r, summary: toApiSummary(r.summary) };
  }

  /** 200 `{retried: n}`: every dead-letter job of the queue/type (all when the body is empty). */
  @Post('dlq/retry')
  @Access('operator')
  @Audited('dlq.retry_all', { body: 'queue' })
  @HttpCode(200)
  @ApiOperation({ operationId: 'retryDeadLetterJobs', summary: 'Retry every dead-letter job matching queue/type/fingerprint (AND)' })
  @ApiAnswer(200, 'Retried', 'How many jobs went back to waiting.')
  async retryAll(@Body() body: RetryDlqDto, @Req() req: FastifyRequest): Promise<{ retried: number }> {
    return { retried: await this.dlq.retryAll({ queue: body.queue, type: body.type, fingerprint: body.fingerprint }, principalOf(req).project) };
  }

  /** 200 `{purged: n}`; the jobs' audit rows and history stay. */
  @Delete('dlq')
  @Access('operator')
  @Audited('dlq.purge', { query: 'queue' })
  @ApiOperation({ operationId: 'purgeDeadLetterJobs', summary: 'Purge the dead-letter queue of one queue (every queue without ?queue=)' })
  @ApiAnswer(200, 'Purged', 'How many jobs were removed (their history stays).')
  async purge(@Query() q: PurgeDlqQueryDto, @Req() req: FastifyRequest): Promise<{ purged: number }> {
    return { purged: await this.dlq.purge(q.queue, principalOf(req).project) };
  }

  /** 200 with the job back in waiting, attempts 0; 409 unless failed/cancelled; 404 unknown. */
  @Post(':id/retry')
  @Access('operator')
  @Audited('job.retry', { param: 'id' })
  @HttpCode(200)
  @ApiOperation({ operationId: 'retryJob', summary: 'Retry a failed (or cancelled) job, optionally with a new payload' })
  @ApiAnswer(200, 'Job', 'The job, back in waiting with attempts 0.')
  @ApiErrors([409, 'The job is neither failed nor cancelled (code conflict).'])
  async retry(@Param('id') id: string, @Body() body: RetryJobDto, @Req() req: FastifyRequest): Promise<ApiJob> {
    return toApiJob(await this.dlq.retry(id, principalOf(req).project, body.payload as Record<string, Json> | undefined));
  }
}
