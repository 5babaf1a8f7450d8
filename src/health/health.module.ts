import { Module } from '@nestjs/common';
import { AuditDbModule } from '../audit/audit-db.module';
import { HealthController } from './health.controller';

/** Liveness and readiness (api role); readiness needs the PostgreSQL connection. */
@Module({ imports: [AuditDbModule], controllers: [HealthController] })
export class HealthModule {}
