import { Controller, Get, Res } from '@nestjs/common';
import { Access } from '../http/access.decorator';
import { ApiOperation, ApiProduces, ApiTags } from '@nestjs/swagger';
import type { FastifyReply } from 'fastify';
import { ApiAnswer } from '../http/openapi/decorators';
import { SluiceMetrics } from './sluice-metrics';

/**
 * API.md `GET /metrics`: Prometheus text exposition of this process's roles (src/metrics/metrics.module.ts),
 * every project's labels: with AUTH=on METRICS_TOKEN or a root key only (src/auth/auth.guard.ts).
 */
@ApiTags('ops')
@Controller()
export class MetricsController {
  constructor(private readonly metrics: SluiceMetrics) {}

  @Get('metrics')
  @Access('metrics')
  @ApiOperation({ operationId: 'getMetrics', summary: 'Prometheus metrics' })
  @ApiAnswer(200, { type: 'string' }, 'Prometheus text exposition of this process.')
  @ApiProduces('text/plain')
  async scrape(@Res({ passthrough: true }) reply: FastifyReply): Promise<string> {
    const { contentType, body } = await this.metrics.render();
    void reply.header('content-type', contentType);
    return body;
  }
}
