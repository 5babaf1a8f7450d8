import { Body, Controller, Get, HttpCode, Param, Post, Res } from '@nestjs/common';
import { ApiOperation, ApiTags } from '@nestjs/swagger';
import type { FastifyReply } from 'fastify';
import { ApiJob, toApiJob } from '../http/api-job';
import { EnqueueBatchDto, EnqueueJobDto } from './dto/enqueue-job.dto';
import { JobsService } from './jobs.service';

/** API.md "Jobs": enqueue and read. */
@ApiTags('jobs')
@Controller('jobs')
export class JobsController {
  constructor(private readonly jobs: JobsService) {}

  /**
   * 201 with the new job; 200 with the existing job and
   * `Idempotent-Replayed: true` when its idempotency key matched.
   */
  @Post()
  @ApiOperation({ summary: 'Enqueue a job' })
  async create(@Body() body: EnqueueJobDto, @Res({ passthrough: true }) reply: FastifyReply): Promise<ApiJob> {
    const [r] = await this.jobs.enqueue([body]);
    if (r.replayed) void reply.status(200).header('idempotent-replayed', 'true');
    else void reply.status(201);
    return toApiJob(r.job);
  }

  /** 201 `{jobs: [job...]}` in input order; all validated before any is enqueued. */
  @Post('batch')
  @HttpCode(201)
  @ApiOperation({ summary: 'Enqueue 1..1000 jobs (atomic per queue)' })
  async createBatch(@Body() body: EnqueueBatchDto): Promise<{ jobs: ApiJob[] }> {
    const out = await this.jobs.enqueue(body.jobs, true);
    return { jobs: out.map((r) => toApiJob(r.job)) };
  }

  @Get(':id')
  @ApiOperation({ summary: 'A job by id (Redis while live, PostgreSQL after)' })
  async get(@Param('id') id: string): Promise<ApiJob> {
    return toApiJob(await this.jobs.get(id));
  }
}
