import { ApiPropertyOptional } from '@nestjs/swagger';
import { IsIn, IsOptional, IsString, Matches, MaxLength } from 'class-validator';
import { UUID_RE } from '../../history/common';
import { PageQueryDto } from '../../http/page-query.dto';

export { PageQueryDto };
import { FINGERPRINT_PATTERN } from '../../core/error-fingerprint';
import { JOB_STATUSES } from '../../core/job-status';
import { LIMITS } from '../../core/job-options';

/** `GET /jobs` query: exact-match filters (all optional), then the page. */
export class ListJobsQueryDto extends PageQueryDto {
  @ApiPropertyOptional({ pattern: LIMITS.queuePattern.source })
  @IsOptional()
  @IsString()
  @Matches(LIMITS.queuePattern, { message: `must match ${LIMITS.queuePattern.source}` })
  queue?: string;

  @ApiPropertyOptional({ enum: JOB_STATUSES })
  @IsOptional()
  @IsIn(JOB_STATUSES as unknown as string[], { message: `must be one of ${JOB_STATUSES.join(', ')}` })
  status?: string;

  @ApiPropertyOptional({ pattern: LIMITS.typePattern.source })
  @IsOptional()
  @IsString()
  @Matches(LIMITS.typePattern, { message: `must match ${LIMITS.typePattern.source}` })
  type?: string;

  @ApiPropertyOptional({ format: 'uuid', description: 'only the jobs of this flow (POST /flows)' })
  @IsOptional()
  @IsString()
  @Matches(UUID_RE, { message: 'must be a UUID' })
  flowId?: string;

  @ApiPropertyOptional({ description: 'created at or after (ISO-8601); required with payload' })
  @IsOptional()
  @IsString()
  @MaxLength(64)
  from?: string;

  @ApiPropertyOptional({ description: 'created before (ISO-8601); with payload: default now, and to − from ≤ 31 days' })
  @IsOptional()
  @IsString()
  @MaxLength(64)
  to?: string;

  @ApiPropertyOptional({ description: 'JSON object the payload contains, e.g. {"orderId":42} (≤ 4 KB, ≤ 8 levels); needs from (and to)' })
  @IsOptional()
  @IsString()
  @MaxLength(8192)
  payload?: string;
}

/** `GET /jobs/dlq/all` query: exact-match filters (all optional), then the page. */
export class ListDlqQueryDto extends PageQueryDto {
  @ApiPropertyOptional({ pattern: LIMITS.queuePattern.source })
  @IsOptional()
  @IsString()
  @Matches(LIMITS.queuePattern, { message: `must match ${LIMITS.queuePattern.source}` })
  queue?: string;

  @ApiPropertyOptional({ pattern: LIMITS.typePattern.source })
  @IsOptional()
  @IsString()
  @Matches(LIMITS.typePattern, { message: `must match ${LIMITS.typePattern.source}` })
  type?: string;

  @ApiPropertyOptional({ pattern: FINGERPRINT_PATTERN.source, description: 'one dead-letter group (GET /jobs/dlq/groups)' })
  @IsOptional()
  @IsString()
  @Matches(FINGERPRINT_PATTERN, { message: `must match ${FINGERPRINT_PATTERN.source}` })
  fingerprint?: string;
}
