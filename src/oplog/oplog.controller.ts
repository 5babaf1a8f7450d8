import { Controller, Get, Inject, Query, Req } from '@nestjs/common';
import { ApiOperation, ApiTags } from '@nestjs/swagger';
import { ApiAnswer } from '../http/openapi/decorators';
import type { FastifyRequest } from 'fastify';
import type { DataSource } from 'typeorm';
import { POSTGRES_DB } from '../postgres/postgres.module';
import { Access } from '../http/access.decorator';
import { principalOf } from '../auth/principal';
import { PageQueryDto } from '../http/page-query.dto';
import { listOplog, type ApiOplogEntry } from './oplog-queries';

/** API.md v1.1 `GET /audit-log` (admin): the operator audit log of the caller's project. */
@ApiTags('audit log')
@Controller('audit-log')
export class OplogController {
  constructor(@Inject(POSTGRES_DB) private readonly db: DataSource) {}

  /** 200 `{items, nextCursor}`, newest first; 400 names a bad limit or cursor. */
  @Get()
  @Access('admin')
  @ApiOperation({ operationId: 'listAuditLog', summary: 'Operator actions of your project, newest first: who, what, target, when, from which address, answered how' })
  @ApiAnswer(200, 'AuditLogPage', 'One page of the log, newest first.')
  list(@Query() q: PageQueryDto, @Req() req: FastifyRequest): Promise<{ items: ApiOplogEntry[]; nextCursor: string | null }> {
    return listOplog(this.db, principalOf(req).project, q.cursor, q.limit);
  }
}
