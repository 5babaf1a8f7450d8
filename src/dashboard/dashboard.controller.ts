import { Controller, Get, Header, Query, Req } from '@nestjs/common';
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
  constructor(private readonly dashboard: DashboardService) {}

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

  @Get('dashboard/recent')
  @Access('viewer')
  @ApiOperation({ summary: 'The last 20 jobs by updatedAt, newest first' })
  async recent(): Promise<ApiJob[]> {
    return (await this.dashboard.recent()).map(toApiJob);
  }
}
