import { Controller, Get, Header, Query, Req, Res } from '@nestjs/common';
import type { FastifyReply } from 'fastify';
import { ApiProduces } from '@nestjs/swagger';
import { JobNotFoundError } from '../core/errors';
import { HistoryQueries } from '../audit/queries';
import { LiveHub } from './live/live-hub';
import { LiveQueryDto } from './dto/live-query.dto';
import type { FastifyRequest } from 'fastify';
import { principalOf } from '../auth/principal';
import { Access } from '../auth/access.decorator';
import { ApiExcludeEndpoint, ApiOperation, ApiTags } from '@nestjs/swagger';
import { ApiJob, iso, toApiJob } from '../http/api-job';
import { MetricsQueryDto } from './dto/metrics-query.dto';
import { DASHBOARD_CSP, DASHBOARD_HTML } from './dashboard-page';
import { DashboardService, DashboardStats } from './dashboard.service';

/** API.md "Dashboard": the stats and recent-jobs feeds, and the web page that polls them. */
@ApiTags('dashboard')
@Controller()
export class DashboardController {
  constructor(
    private readonly dashboard: DashboardService,
    private readonly live: LiveHub,
    private readonly history: HistoryQueries,
  ) {}

  @Get()
  @Access('public')
  @ApiExcludeEndpoint()
  @Header('content-type', 'text/html; charset=utf-8')
  @Header('cache-control', 'no-store')
  @Header('content-security-policy', DASHBOARD_CSP)
  @Header('x-content-type-options', 'nosniff')
  root(): string {
    return DASHBOARD_HTML;
  }

  @Get('dashboard')
  @Access('public')
  @ApiOperation({ summary: 'The web dashboard (HTML)' })
  @Header('content-type', 'text/html; charset=utf-8')
  @Header('cache-control', 'no-store')
  @Header('content-security-policy', DASHBOARD_CSP)
  @Header('x-content-type-options', 'nosniff')
  page(): string {
    return DASHBOARD_HTML;
  }

  @Get('dashboard/stats')
  @Access('viewer')
  @ApiOperation({ summary: 'Counts per queue and in total, live workers, throughput, audit lag' })
  stats(): Promise<DashboardStats> {
    return this.dashboard.stats();
  }

  /** 200 `{series: [{at, completed, failed}], stepMs}` oldest first, zero-filled; 400 names from, to or stepMs. */
  @Get('dashboard/metrics')
  @Access('viewer')
  @ApiOperation({ summary: 'Jobs completed and failed per step (from PostgreSQL), for charts; range ≤ 31 days, ≤ 2000 points' })
  async metrics(@Query() q: MetricsQueryDto, @Req() req: FastifyRequest): Promise<{ stepMs: number; series: { at: string; completed: number; failed: number }[] }> {
    const m = await this.dashboard.metrics(principalOf(req).project, q);
    return { stepMs: m.stepMs, series: m.series.map((p) => ({ at: iso(p.at) as string, completed: p.completed, failed: p.failed })) };
  }

  /**
   * Live updates as Server-Sent Events (README "Live updates"): `counts`
   * (the stats body, at most once a second, when changed) and `job`
   * ({id, queue, status, updatedAt}) per job change; with `?job=<id>` that
   * job's object, `event`s and `log`s instead. A `: heartbeat` comment every
   * 15 s. 503 when this process holds 100 streams; 404 for an unknown job.
   */
  @Get('dashboard/events')
  @Access('viewer')
  @ApiProduces('text/event-stream')
  @ApiOperation({ summary: 'Live updates (Server-Sent Events): counts and job changes; ?job=<id> for one job’s events, logs and progress' })
  async events(@Query() q: LiveQueryDto, @Req() req: FastifyRequest, @Res() reply: FastifyReply): Promise<void> {
    const project = principalOf(req).project;
    if (q.job !== undefined && !(await this.history.getJob(q.job))) throw new JobNotFoundError(q.job);
    // 503 while the response is still Fastify's, so the error envelope is sent as usual.
    this.live.assertCapacity();
    const headers = reply.getHeaders();
    reply.hijack();
    this.live.open(reply.raw, headers, project, q.job?.toLowerCase() ?? null);
  }

  @Get('dashboard/recent')
  @Access('viewer')
  @ApiOperation({ summary: 'The last 20 jobs by updatedAt, newest first' })
  async recent(): Promise<ApiJob[]> {
    return (await this.dashboard.recent()).map(toApiJob);
  }
}
