import { Controller, Get, Inject, Optional, Res } from '@nestjs/common';
import type { FastifyReply } from 'fastify';
import { Access } from '../http/access.decorator';
import { ApiOperation, ApiTags } from '@nestjs/swagger';
import type { DataSource } from 'typeorm';
import { POSTGRES_DB } from '../postgres/postgres.module';
import type { SluiceConfig } from '../config/config';
import { SLUICE_CONFIG } from '../config/config.module';
import { UnavailableError } from '../core/errors';
import { StoreConnection } from '../core/ports';
import { RestoreState } from '../restore/restore-state';
import { ApiAnswer } from '../http/openapi/decorators';
import { needsPostgres, probeReadiness, Readiness, READY_TIMEOUT_MS } from './readiness';

/** `p`, or false after READY_TIMEOUT_MS (a hung Redis must not hang the probe). */
function withinReadyTimeout(p: Promise<boolean>): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<boolean>((res) => (timer = setTimeout(() => res(false), READY_TIMEOUT_MS)));
  return Promise.race([p, late]).finally(() => clearTimeout(timer));
}

/** 503 of `GET /readyz`: the envelope's `details` name each dependency that is down. */
export class NotReadyError extends UnavailableError {
  constructor(readonly details: { path: string; message: string }[]) {
    super(`not ready: ${details.map((d) => d.path).join(', ')} ${details.length > 1 ? 'are' : 'is'} not available`);
  }
}

/**
 * 503 body of `GET /readyz` while Redis is rebuilt from PostgreSQL (API.md
 * v1.2 "Redis loss at run time"): `status` as the contract says, plus the
 * usual error envelope.
 */
export interface RestoringBody {
  status: 'restoring';
  error: { code: 'unavailable'; message: string; details: [] };
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
    private readonly restore: RestoreState,
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
   * 503 `{status:'restoring', error}` while a rebuild of Redis from
   * PostgreSQL runs (src/restore/loss-watch.ts), in any process, and from the
   * moment Redis lost the installation marker this process saw (RestoreState).
   * @throws NotReadyError (503 `unavailable`, details per failed check) when
   *   Redis is down, or PostgreSQL for the audit and scheduler roles; answers
   *   within ~1.5 s even when a service hangs.
   */
  @Get('readyz')
  @Access('public')
  @ApiOperation({ operationId: 'getReadiness', summary: "Readiness: the services this process's roles need (Redis; PostgreSQL and migrations for audit and scheduler)" })
  @ApiAnswer(200, 'Readiness', 'Ready, or degraded (PostgreSQL down, not needed by these roles).')
  async readyz(@Res({ passthrough: true }) reply: FastifyReply): Promise<ReadyBody | RestoringBody> {
    const [r, restoring] = await Promise.all([
      probeReadiness(this.redis, this.db ?? null, this.pgNeeded),
      // Unknown (Redis down) counts as not restoring: the probe reports Redis itself.
      this.redis.isReady() ? withinReadyTimeout(this.restore.restoring()).catch(() => false) : false,
    ]);
    if (!r.ready) throw new NotReadyError(r.problems);
    if (restoring) {
      reply.status(503);
      return { status: 'restoring', error: { code: 'unavailable', message: 'Redis is being rebuilt from PostgreSQL after it lost its data; retry shortly', details: [] } };
    }
    if (!r.degraded) return { status: 'ok', checks: r.checks };
    const failed: Partial<Record<'postgres' | 'migrations', string>> = {};
    for (const p of r.problems) if (p.path !== 'redis') failed[p.path] = r.checks[p.path];
    return { status: 'degraded', ...failed, checks: r.checks, details: r.problems };
  }
}
