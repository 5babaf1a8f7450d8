import { Controller, Get, Req, Res } from '@nestjs/common';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { Access } from '../auth/access.decorator';
import { ApiExcludeEndpoint, ApiOperation, ApiTags } from '@nestjs/swagger';
import { ApiJob, toApiJob } from '../http/api-job';
import { ApiAnswer } from '../http/openapi/decorators';
import { ConsoleAssets } from './console-assets';
import { DashboardService, DashboardStats } from './dashboard.service';

/** API.md "Dashboard": the stats and recent-jobs feeds, and the operator console's static files under `/ui/`. */
@ApiTags('dashboard')
@Controller()
export class DashboardController {
  private readonly assets = new ConsoleAssets();

  constructor(private readonly dashboard: DashboardService) {}

  /**
   * `GET /` and `GET /dashboard` (API.md: the web dashboard) redirect to the console.
   * Like the console's files below, browser routes rather than API operations: outside
   * the OpenAPI document (a redirect has no 2xx answer to describe; see its info.description).
   */
  @Get()
  @Access('public')
  @ApiExcludeEndpoint()
  root(@Res() reply: FastifyReply): void {
    void reply.redirect('/ui/', 302);
  }

  @Get('dashboard')
  @Access('public')
  @ApiExcludeEndpoint()
  page(@Res() reply: FastifyReply): void {
    void reply.redirect('/ui/', 302);
  }

  /**
   * The operator console (src/dashboard/console, built into dist/console): hashed
   * assets with a year's cache, every other `/ui/*` path the app's index.html (its
   * router picks the view). No credentials: the app asks `GET /auth/session`.
   * 404 for a missing asset; 503 when the console was not built.
   */
  @Get(['ui', 'ui/*'])
  @Access('public')
  @ApiExcludeEndpoint()
  console(@Req() req: FastifyRequest, @Res() reply: FastifyReply): void {
    const path = decodeURIComponentSafe(req.url.split('?')[0]);
    if (path === '/ui') {
      void reply.redirect('/ui/', 302);
      return;
    }
    if (!this.assets.built()) {
      void reply.status(503).type('text/plain; charset=utf-8').header('cache-control', 'no-store').send('The operator console is not built: run `npm run build`.\n');
      return;
    }
    const file = this.assets.lookup(path.replace(/^\/ui\//, ''));
    if (!file) {
      void reply.status(404).type('text/plain; charset=utf-8').send('Not found\n');
      return;
    }
    void reply.type(file.contentType).header('cache-control', file.cacheControl).send(file.body);
  }

  @Get('dashboard/stats')
  @Access('viewer')
  @ApiOperation({ operationId: 'getDashboardStats', summary: 'Counts per queue and in total, live workers, throughput, audit lag' })
  @ApiAnswer(200, 'DashboardStats', 'The aggregates.')
  stats(): Promise<DashboardStats> {
    return this.dashboard.stats();
  }

  @Get('dashboard/recent')
  @Access('viewer')
  @ApiOperation({ operationId: 'listRecentJobs', summary: 'The last 20 jobs by updatedAt, newest first' })
  @ApiAnswer(200, ['Job'], 'Up to 20 jobs, newest update first.')
  async recent(): Promise<ApiJob[]> {
    return (await this.dashboard.recent()).map(toApiJob);
  }
}

/** `%2e%2e` and friends decoded; a malformed escape leaves the path as it was (it then matches no file). */
function decodeURIComponentSafe(s: string): string {
  try {
    return decodeURIComponent(s);
  } catch {
    return s;
  }
}
