import { Body, Controller, HttpCode, Param, Post, Req, Res } from '@nestjs/common';
import { principalOf } from '../../auth/principal';
import { Access } from '../../http/access.decorator';
import { NotAudited, WORKER_PROTOCOL } from '../../http/audited.decorator';
import { ApiOperation, ApiTags } from '@nestjs/swagger';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { ApiJob, toApiClaimedJob } from '../../http/api-job';
import { ApiAnswer } from '../../http/openapi/decorators';
import { ClaimDto } from './dto/claim.dto';
import { ExternalService } from './external.service';

/** API.md "External worker protocol": `POST /queues/:name/claim`. */
@ApiTags('external workers')
@Controller('queues')
export class ClaimController {
  constructor(private readonly external: ExternalService) {}

  /** 200 `{jobs: [job + lockToken + leaseExpiresAt]}`; empty when nothing came within waitMs. */
  @Post(':name/claim')
  @Access('worker')
  @NotAudited(WORKER_PROTOCOL)
  @HttpCode(200)
  @ApiOperation({ operationId: 'claimJobs', summary: 'Claim up to `max` jobs under a lease; long poll up to `waitMs`' })
  @ApiAnswer(200, 'ClaimedJobs', 'The jobs claimed, each with its lock token and lease end; empty when none came within waitMs.')
  async claim(
    @Param('name') name: string,
    @Body() body: ClaimDto,
    @Res({ passthrough: true }) reply: FastifyReply,
    @Req() req: FastifyRequest,
  ): Promise<{ jobs: (ApiJob & { lockToken: string; leaseExpiresAt: string | null })[] }> {
    // The response closed before this claim returned: the client went away, or
    // the answer deadline (HTTP_ANSWER_TIMEOUT_MS) answered 503 while Redis
    // stalled. Stop waiting; what a claim still in flight gets is handed back
    // (attempt refunded) rather than held by nobody until its lease expires.
    const gone = new AbortController();
    const onClose = () => gone.abort();
    reply.raw.once('close', onClose);
    try {
      const p = principalOf(req);
      // A worker credential claims only from external queues (API.md v1.2); admin may claim from any of its project's.
      const jobs = await this.external.claim(name, body, gone.signal, p.project, p.role === 'worker');
      return { jobs: jobs.map(toApiClaimedJob) };
    } finally {
      reply.raw.off('close', onClose);
    }
  }
}
