import { Controller, Get, Inject, Optional } from '@nestjs/common';
import { Access } from '../http/access.decorator';
import { ApiOperation, ApiTags } from '@nestjs/swagger';
import type { DataSource } from 'typeorm';
import { POSTGRES_DB } from '../postgres/postgres.module';
import type { SluiceConfig } from '../config/config';
import { SLUICE_CONFIG } from '../config/config.module';
import { UnavailableError } from '../core/errors';
import { StoreConnection } from '../core/ports';
import { ApiAnswer } from '../http/openapi/decorators';
import { needsPostgres, probeReadiness, Readiness } from './readiness';

/** 503 of `GET /readyz`: the envelope's `details` name each dependency that is down. */
export class NotReadyError extends UnavailableError {
  constructor(readonly details: { path: string; message: string }[]) {
    super(`not ready: ${details.map((d) => d.path).join(', ')} ${details.length > 1 ? 'are' : 'is'} not available`);
  }
}

/** 200 body of `GET /readyz`. */
export type ReadyBody =
  | { status: 'ok'; checks: Readiness['checks'] }
  /** Plus the state of each failed check at the top level, e.g. `postgres: 'down'`. */
  | ({ status: 'degraded'; checks: Readiness['checks']; details: Readiness['problems'] } & Partial<Record<'postgres' | 'migrations', string>>);

/** API.md `GET /healthz` (liveness) and `GET /readyz` (readiness), served by every role. */
@ApiTags('ops')
@Controller()
export class HealthController {
  private readonly pgNeeded: boolean;

  constructor(
    private readonly redis: StoreConnection,
    @Inject(SLUICE_CONFIG) config: SluiceConfig,
    // Absent in a process whose roles use no PostgreSQL (ROLE=worker).
    @Optional() @Inject(POSTGRES_DB) private readonly db?: DataSource,
  ) {
    this.pgNeeded = needsPostgres(config.roles);
  }

  /** 200 while the process runs; touches no backing service. */
  @Get('healthz')
  @Access('public')
  @ApiOperation({ operationId: 'getHealth', summary: 'Liveness' })
  @ApiAnswer(200, 'Health', 'The process runs.')
  healthz(): { status: 'ok' } {
    return { status: 'ok' };
  }

  /**
   * 200 `{status:'ok', checks:{redis, postgres?, migrations?}}` when every
   * service answers; 200 `{status:'degraded', postgres:'down', checks, details}`
   * when only PostgreSQL (or its migrations) fails and this process's roles
   * do not need it (api, worker). A worker-only process has no PostgreSQL
   * connection and reports Redis alone.
   * @throws NotReadyError (503 `unavailable`, details per failed check) when
   *   Redis is down, or PostgreSQL for the audit and scheduler roles; answers
   *   within ~1.5 s even when a service hangs.
   */
  @Get('readyz')
  @Access('public')
  @ApiOperation({ operationId: 'getReadiness', summary: "Readiness: the services this process's roles need (Redis; PostgreSQL and migrations for audit and scheduler)" })
  @ApiAnswer(200, 'Readiness', 'Ready, or degraded (PostgreSQL down, not needed by these roles).')
  async readyz(): Promise<ReadyBody> {
    const r = await probeReadiness(this.redis, this.db ?? null, this.pgNeeded);
    if (!r.ready) throw new NotReadyError(r.problems);
    if (!r.degraded) return { status: 'ok', checks: r.checks };
    const failed: Partial<Record<'postgres' | 'migrations', string>> = {};
    for (const p of r.problems) if (p.path !== 'redis') failed[p.path] = r.checks[p.path];
    return { status: 'degraded', ...failed, checks: r.checks, details: r.problems };
  }
}
