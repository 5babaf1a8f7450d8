import { ApiPropertyOptional } from '@nestjs/swagger';
import { Type } from 'class-transformer';
import { IsObject, IsOptional, ValidateNested } from 'class-validator';
import { LIMITS } from '../../core/job-options';
import { IntInRange, QueryIntInRange } from '../../http/validation';
import { KeyRateLimitDto } from './configure-queue.dto';

/** `GET /queues/:name/keys` query. */
export class QueueKeysQueryDto {
  @ApiPropertyOptional({ type: 'integer', minimum: 1, maximum: LIMITS.maxKeysListLimit, default: LIMITS.defaultKeysListLimit, description: 'most keys answered' })
  @IsOptional()
  @QueryIntInRange(1, LIMITS.maxKeysListLimit)
  limit?: number;
}

/**
 * The `PUT /queues/:name/keys/:key` body (API.md v1.2 "overrides for one
 * key"): limits that replace the queue's `keyConcurrency` / `keyRateLimit`
 * for this key. Only the fields sent change; `null` removes that override
 * (the queue's limit applies again). Unknown fields are rejected.
 */
export class KeyOverrideDto {
  @ApiPropertyOptional({
    type: 'integer',
    minimum: 1,
    maximum: LIMITS.maxKeyConcurrency,
    nullable: true,
    description: "at most this many active jobs of this key, in place of the queue's keyConcurrency; null = the queue's applies",
  })
  @IsOptional()
  @IntInRange(1, LIMITS.maxKeyConcurrency)
  concurrency?: number | null;

  @ApiPropertyOptional({ type: KeyRateLimitDto, nullable: true, description: "starts of this key per sliding window, in place of the queue's keyRateLimit; null = the queue's applies" })
  @IsOptional()
  @IsObject({ message: 'must be an object or null' })
  @ValidateNested()
  @Type(() => KeyRateLimitDto)
  rateLimit?: KeyRateLimitDto | null;
}
