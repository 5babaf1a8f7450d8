import { ApiPropertyOptional } from '@nestjs/swagger';
import { IsObject, IsOptional, IsString, Matches } from 'class-validator';
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
}

/** `DELETE /jobs/dlq` query: the queue to purge (every queue when absent). */
export class PurgeDlqQueryDto {
  @ApiPropertyOptional({ pattern: LIMITS.queuePattern.source })
  @IsOptional()
  @IsString()
  @Matches(LIMITS.queuePattern, { message: `must match ${LIMITS.queuePattern.source}` })
  queue?: string;
}
