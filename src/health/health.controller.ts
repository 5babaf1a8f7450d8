import { Controller, Get, Inject } from '@nestjs/common';
import { Access } from '../auth/access.decorator';
import { ApiOperation, ApiTags } from '@nestjs/swagger';
import type { DataSource } from 'typeorm';
import { AUDIT_DB } from '../audit/audit-db.module';
import { UnavailableError } from '../core/errors';
import type { RedisClient } from '../redis/connection';
import { REDIS } from '../redis/redis.module';
import { probeReadiness, Readiness } from './readiness';

/** 503 of `GET /readyz`: the envelope's `details` name each dependency that is down. */
export class NotReadyError extends UnavailableError {
  constructor(readonly details: { path: string; message: string }[]) {
    super(`not ready: ${details.map((d) => d.path).join(', ')} ${details.length > 1 ? 'are' : 'is'} not available`);
  }
}

/** API.md `GET /healthz` (liveness) and `GET /readyz` (readiness). */
@ApiTags('ops')
@Controller()
export class HealthController {
  constructor(
    @Inject(REDIS) private readonly redis: RedisClient,
    @Inject(AUDIT_DB) private readonly db: DataSource,
  ) {}

  /** 200 while the process runs; touches no backing service. */
  @Get('healthz')
  @Access('public')
  @ApiOperation({ summary: 'Liveness' })
  healthz(): { status: 'ok' } {
    return { status: 'ok' };
  }

  /**
   * 200 `{status:'ok', checks:{redis, postgres, migrations}}` when Redis
   * answers PING, PostgreSQL answers SELECT 1 and every migration is applied.
   * @throws NotReadyError (503 `unavailable`, details per failed check) otherwise;
   *   answers within ~1.5 s even when a service hangs.
   */
  @Get('readyz')
  @Access('public')
  @ApiOperation({ summary: 'Readiness: Redis, PostgreSQL and migrations' })
  async readyz(): Promise<{ status: 'ok'; checks: Readiness['checks'] }> {
    const r = await probeReadiness(this.redis, this.db);
    if (!r.ready) throw new NotReadyError(r.problems);
    return { status: 'ok', checks: r.checks };
  }
}
