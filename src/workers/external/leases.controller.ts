import { Body, Controller, HttpCode, Param, Post, Req } from '@nestjs/common';
import type { FastifyRequest } from 'fastify';
import { principalOf } from '../../auth/principal';
import { Access } from '../../http/access.decorator';
import { NotAudited, WORKER_PROTOCOL } from '../../http/audited.decorator';
import { ApiOperation, ApiTags } from '@nestjs/swagger';
import { ApiJob, iso, toApiJob } from '../../http/api-job';
import { ApiAnswer, ApiErrors } from '../../http/openapi/decorators';
import { CompleteDto, FailDto, HeartbeatDto, ReleaseDto } from './dto/lease.dto';
import { ExternalService } from './external.service';

/**
 * API.md "External worker protocol": the lease calls under `/jobs/:id/…`
 * (a controller of its own; the jobs controller serves the rest of `/jobs`).
 */
@ApiTags('external workers')
@Controller('jobs')
export class LeasesController {
  constructor(private readonly external: ExternalService) {}

  /** 200 `{leaseExpiresAt, cancelRequested}`; 409 `lease_lost`; 404 unknown id. */
  @Post(':id/heartbeat')
  @Access('worker')
  @NotAudited(WORKER_PROTOCOL)
  @HttpCode(200)
  @ApiOperation({ operationId: 'heartbeatJob', summary: 'Renew the lease; report progress and log lines' })
  @ApiAnswer(200, 'LeaseRenewed', 'The lease is renewed.')
  @ApiErrors([409, 'The lease is lost: expired, or the lock token is stale or wrong (code lease_lost); nothing changed.'])
  async heartbeat(@Param('id') id: string, @Body() body: HeartbeatDto, @Req() req: FastifyRequest): Promise<{ leaseExpiresAt: string | null; cancelRequested: boolean }> {
    const r = await this.external.heartbeat(id, body, principalOf(req).project);
    return { leaseExpiresAt: iso(r.leaseExpiresAt), cancelRequested: r.cancelRequested };
  }

  /** 200 with the job (`completed`, or `cancelled` when a cancel was requested); 409 `lease_lost`. */
  @Post(':id/complete')
  @Access('worker')
  @NotAudited(WORKER_PROTOCOL)
  @HttpCode(200)
  @ApiOperation({ operationId: 'completeJob', summary: 'Complete the attempt with a result' })
  @ApiAnswer(200, 'Job', 'The job, completed (or cancelled when a cancel was requested).')
  @ApiErrors([409, 'The lease is lost (code lease_lost); nothing changed.'])
  async complete(@Param('id') id: string, @Body() body: CompleteDto, @Req() req: FastifyRequest): Promise<ApiJob> {
    return toApiJob(await this.external.complete(id, body, principalOf(req).project));
  }

  /** 200 with the job (`delayed` for a retry, `failed` in the DLQ); 409 `lease_lost`. */
  @Post(':id/fail')
  @Access('worker')
  @NotAudited(WORKER_PROTOCOL)
  @HttpCode(200)
  @ApiOperation({ operationId: 'failJob', summary: 'Fail the attempt: retry with backoff, or dead-letter' })
  @ApiAnswer(200, 'Job', 'The job: delayed for a retry, or failed (in the dead-letter queue).')
  @ApiErrors([409, 'The lease is lost (code lease_lost); nothing changed.'])
  async fail(@Param('id') id: string, @Body() body: FailDto, @Req() req: FastifyRequest): Promise<ApiJob> {
    return toApiJob(await this.external.fail(id, body, principalOf(req).project));
  }

  /** 200 with the job (`waiting`, or `delayed` with `delayMs`; attempt not counted); 409 `lease_lost`. */
  @Post(':id/release')
  @Access('worker')
  @NotAudited(WORKER_PROTOCOL)
  @HttpCode(200)
  @ApiOperation({ operationId: 'releaseJob', summary: 'Give the job back without using an attempt (e.g. on shutdown)' })
  @ApiAnswer(200, 'Job', 'The job: waiting (delayed with delayMs), its attempt not counted; cancelled when a cancel was requested.')
  @ApiErrors([409, 'The lease is lost, or the job is no longer held (code lease_lost); nothing changed.'])
  async release(@Param('id') id: string, @Body() body: ReleaseDto, @Req() req: FastifyRequest): Promise<ApiJob> {
    return toApiJob(await this.external.release(id, body, principalOf(req).project));
  }
}
