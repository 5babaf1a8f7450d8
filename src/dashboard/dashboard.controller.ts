import { Controller, Get, Header, Req } from '@nestjs/common';
import type { FastifyRequest } from 'fastify';
import { principalOf } from '../auth/principal';
import { Access } from '../auth/access.decorator';
import { ApiExcludeEndpoint, ApiOperation, ApiProduces, ApiTags } from '@nestjs/swagger';
import { ApiJob, toApiJob } from '../http/api-job';
import { ApiAnswer } from '../http/openapi/decorators';
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
  @ApiOperation({ operationId: 'getDashboardPage', summary: 'The web dashboard (HTML)' })
  @ApiProduces('text/html')
  @ApiAnswer(200, { type: 'string' }, 'The dashboard page.')
  @Header('content-type', 'text/html; charset=utf-8')
  @Header('cache-control', 'no-store')
  @Header('content-security-policy', DASHBOARD_CSP)
  @Header('x-content-type-options', 'nosniff')
  page(): string {
    return DASHBOARD_HTML;
  }

  @Get('dashboard/stats')
  @Access('viewer')
  @ApiOperation({ operationId: 'getDashboardStats', summary: 'Counts per queue and in total, live workers, throughput, audit lag' })
  @ApiAnswer(200, 'DashboardStats', 'The aggregates.')
  stats(@Req() req: FastifyRequest): Promise<DashboardStats> {
    return this.dashboard.stats(principalOf(req).project);
  }

  @Get('dashboard/recent')
  @Access('viewer')
  @ApiOperation({ operationId: 'listRecentJobs', summary: 'The last 20 jobs by updatedAt, newest first' })
  @ApiAnswer(200, ['Job'], 'Up to 20 jobs, newest update first.')
  async recent(@Req() req: FastifyRequest): Promise<ApiJob[]> {
    return (await this.dashboard.recent(principalOf(req).project)).map(toApiJob);
  }
}
