import { QueryIntInRange } from '../../http/validation';
import { ApiPropertyOptional } from '@nestjs/swagger';
import { IsObject, IsOptional, IsString, Matches } from 'class-validator';
import { GROUPS_LIMIT_DEFAULT, GROUPS_LIMIT_MAX } from '../../history/dlq-groups';
import { FINGERPRINT_PATTERN } from '../../core/error-fingerprint';
import { LIMITS } from '../../core/job-options';

/** `POST /jobs/:id/retry` body (optional): a new payload replaces the stored one. */
export class RetryJobDto {
  @ApiPropertyOptional({ type: 'object', additionalProperties: true, description: 'replaces the payload; ≤ MAX_PAYLOAD_BYTES' })
  @IsOptional()
  @IsObject({ message: 'must be a JSON object' })
  payload?: Record<string, unknown>;
}

/** `POST /jobs/dlq/retry` body: which dead-letter jobs to retry (all when empty). */
export class RetryDlqDto {
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

  @ApiPropertyOptional({ pattern: FINGERPRINT_PATTERN.source, description: 'a dead-letter group (GET /jobs/dlq/groups); combined with queue/type as AND' })
  @IsOptional()
  @IsString()
  @Matches(FINGERPRINT_PATTERN, { message: `must match ${FINGERPRINT_PATTERN.source}` })
  fingerprint?: string;
}

/** `GET /jobs/dlq/groups` query. */
export class DlqGroupsQueryDto {
  @ApiPropertyOptional({ pattern: LIMITS.queuePattern.source })
  @IsOptional()
  @IsString()
  @Matches(LIMITS.queuePattern, { message: `must match ${LIMITS.queuePattern.source}` })
  queue?: string;

  @ApiPropertyOptional({ minimum: 1, maximum: GROUPS_LIMIT_MAX, default: GROUPS_LIMIT_DEFAULT })
  @IsOptional()
  @QueryIntInRange(1, GROUPS_LIMIT_MAX)
  limit?: number;
}

/** `DELETE /jobs/dlq` query: the queue to purge (every queue when absent). */
export class PurgeDlqQueryDto {
  @ApiPropertyOptional({ pattern: LIMITS.queuePattern.source })
  @IsOptional()
  @IsString()
  @Matches(LIMITS.queuePattern, { message: `must match ${LIMITS.queuePattern.source}` })
  queue?: string;
}
