import { Module } from '@nestjs/common';
import { HealthController } from './health.controller';

/** Liveness and readiness (every role); uses the PostgreSQL connection when a role of the process opened one (PostgresModule is global). */
@Module({ controllers: [HealthController] })
export class HealthModule {}
