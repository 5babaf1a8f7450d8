import { Controller, Get, Query, Req, Res } from '@nestjs/common';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { ApiExcludeEndpoint, ApiOperation, ApiProduces, ApiTags } from '@nestjs/swagger';
import { JobNotFoundError } from '../core/errors';
import { inProject } from '../core/project-queue';
import { HistoryQueries } from '../history';
import { principalOf } from '../auth/principal';
import { Access } from '../http/access.decorator';
import { ApiJob, iso, toApiJob } from '../http/api-job';
import { ApiAnswer } from '../http/openapi/decorators';
import { ConsoleAssets } from './console-assets';
import { LiveHub } from './live/live-hub';
import { LiveQueryDto } from './dto/live-query.dto';
import { MetricsQueryDto } from './dto/metrics-query.dto';
import { DashboardService, DashboardStats } from './dashboard.service';

/** API.md "Dashboard": the stats and recent-jobs feeds, and the operator console's static files under `/ui/`. */
@ApiTags('dashboard')
@Controller()
export class DashboardController {
  private readonly assets = new ConsoleAssets();

  constructor(
    private readonly dashboard: DashboardService,
    private readonly live: LiveHub,
    private readonly history: HistoryQueries,
  ) {}

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
  stats(@Req() req: FastifyRequest): Promise<DashboardStats> {
    return this.dashboard.stats(principalOf(req).project);
  }

  /** 200 `{series: [{at, completed, failed}], stepMs}` oldest first, zero-filled; 400 names from, to or stepMs. */
  @Get('dashboard/metrics')
  @Access('viewer')
  @ApiOperation({ operationId: 'getDashboardMetrics', summary: 'Jobs completed and failed per step (from PostgreSQL), for charts; range ≤ 31 days, ≤ 2000 points' })
  @ApiAnswer(200, 'DashboardMetrics', "The series of the project's queues (or of one).")
  async metrics(@Query() q: MetricsQueryDto, @Req() req: FastifyRequest): Promise<{ stepMs: number; series: { at: string; completed: number; failed: number }[] }> {
    const m = await this.dashboard.metrics(principalOf(req).project, q);
    return { stepMs: m.stepMs, series: m.series.map((p) => ({ at: iso(p.at) as string, completed: p.completed, failed: p.failed })) };
  }

  /**
   * Live updates as Server-Sent Events (docs/console.md, "How its endpoints work"): `counts`
   * (the stats body, at most once a second, when changed) and `job`
   * ({id, queue, status, updatedAt}) per job change; with `?job=<id>` that
   * job's object, `event`s and `log`s instead. A `: heartbeat` comment every
   * 15 s. 503 when this process holds 100 streams; 404 for an unknown job
   * (or one of another project). Only the caller's project's queues.
   */
  @Get('dashboard/events')
  @Access('viewer')
  @ApiProduces('text/event-stream')
  @ApiOperation({ operationId: 'streamDashboardEvents', summary: 'Live updates (Server-Sent Events): counts and job changes; ?job=<id> for one job’s events, logs and progress' })
  @ApiAnswer(
    200,
    { type: 'string', description: 'Server-Sent Events: `counts`, `job`, `resync`; with ?job= `job`, `event`, `log`; `: heartbeat` comments (docs/api.md "Dashboard and workers")' },
    'An event stream (text/event-stream) that stays open.',
  )
  async events(@Query() q: LiveQueryDto, @Req() req: FastifyRequest, @Res() reply: FastifyReply): Promise<void> {
    const principal = principalOf(req);
    const project = principal.project;
    if (q.job !== undefined) {
      const job = await this.history.getJob(q.job);
      // Another project's job is as unknown as a missing one.
      if (!job || !inProject(job.queue, project)) throw new JobNotFoundError(q.job);
    }
    // 503 while the response is still Fastify's, so the error envelope is sent as usual.
    this.live.assertCapacity();
    const headers = reply.getHeaders();
    reply.hijack();
    this.live.open(reply.raw, headers, project, q.job?.toLowerCase() ?? null, principal.hidePayloads === true);
  }

  @Get('dashboard/recent')
  @Access('viewer')
  @ApiOperation({ operationId: 'listRecentJobs', summary: 'The last 20 jobs by updatedAt, newest first' })
  @ApiAnswer(200, ['Job'], 'Up to 20 jobs, newest update first.')
  async recent(@Req() req: FastifyRequest): Promise<ApiJob[]> {
    return (await this.dashboard.recent(principalOf(req).project)).map(toApiJob);
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
