import { Module } from '@nestjs/common';
import { AuditService } from './mirror.service';

/** The `audit` role. */
@Module({ providers: [AuditService], exports: [AuditService] })
export class AuditModule {}
