import { Module } from '@nestjs/common';
import { AuditService } from './audit.service';

/** The `audit` role. */
@Module({ providers: [AuditService] })
export class AuditModule {}
