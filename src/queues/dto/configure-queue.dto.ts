import { ApiProperty, ApiPropertyOptional, PickType } from '@nestjs/swagger';
import { Type } from 'class-transformer';
import { IsBoolean, IsIn, IsInt, IsObject, IsOptional, Max, Min, ValidateIf, ValidateNested } from 'class-validator';
import { LIMITS } from '../../core/job-options';
import { EnqueueJobDto } from '../../jobs/dto/enqueue-job.dto';
import { IntInRange } from '../../http/validation';
import type { Fairness } from '../../core/ports';

/** The values of a queue's `fairness` (API.md v1.1 "Flow control per key"). */
export const FAIRNESS: readonly Fairness[] = ['fifo', 'round_robin'];

/** `rateLimit` of a queue: at most `max` job starts per `durationMs` window, across all workers. */
export class RateLimitDto {
  @ApiProperty({ type: 'integer', minimum: 1, maximum: LIMITS.maxRateLimitMax })
  @IsInt()
  @Min(1)
  @Max(LIMITS.maxRateLimitMax)
  max!: number;

  @ApiProperty({ type: 'integer', minimum: 1, maximum: LIMITS.maxRateLimitDurationMs, description: 'window length, ms' })
  @IsInt()
  @Min(1)
  @Max(LIMITS.maxRateLimitDurationMs)
  durationMs!: number;
}

/**
 * A per-key rate limit (a queue's `keyRateLimit`, a key's override `rateLimit`):
 * at most `max` starts of one key in any sliding window of `durationMs`. Each
 * key keeps the start times of its window as a list, so `max` is bounded
 * lower than a queue's `rateLimit.max` (10,000).
 */
export class KeyRateLimitDto {
  @ApiProperty({ type: 'integer', minimum: 1, maximum: LIMITS.maxKeyRateLimitMax, description: 'starts per window per key' })
  @IntInRange(1, LIMITS.maxKeyRateLimitMax)
  max!: number;

  @ApiProperty({ type: 'integer', minimum: 1, maximum: LIMITS.maxRateLimitDurationMs, description: 'sliding window length, ms' })
  @IntInRange(1, LIMITS.maxRateLimitDurationMs)
  durationMs!: number;
}

/** Per-queue job defaults, used by jobs that do not set the field themselves: the same rules as on `POST /jobs`. */
export class QueueDefaultsDto extends PickType(EnqueueJobDto, ['maxAttempts', 'backoff', 'timeoutMs'] as const) {}

/**
 * The `PUT /queues/:name` body. Every field is optional; only the fields sent
 * change (`null` removes a limit). Unknown fields are rejected.
 */
export class ConfigureQueueDto {
  @ApiPropertyOptional({ type: 'integer', minimum: 1, maximum: LIMITS.maxConcurrency, nullable: true, description: 'cap on active jobs across all workers; null = none' })
  @IsOptional()
  @IsInt()
  @Min(1)
  @Max(LIMITS.maxConcurrency)
  maxConcurrency?: number | null;

  @ApiPropertyOptional({ type: RateLimitDto, nullable: true, description: 'cap on job starts per window across all workers; null = none' })
  @IsOptional()
  @IsObject({ message: 'must be an object or null' })
  @ValidateNested()
  @Type(() => RateLimitDto)
  rateLimit?: RateLimitDto | null;

  @ApiPropertyOptional({ type: QueueDefaultsDto })
  @ValidateIf((o: ConfigureQueueDto) => o.defaults !== undefined)
  @IsObject({ message: 'must be an object' })
  @ValidateNested()
  @Type(() => QueueDefaultsDto)
  defaults?: QueueDefaultsDto;

  @ApiPropertyOptional({ description: 'served only through the external worker protocol; accepts any job type' })
  @ValidateIf((o: ConfigureQueueDto) => o.external !== undefined)
  @IsBoolean()
  external?: boolean;

  @ApiPropertyOptional({
    type: 'integer',
    minimum: 1,
    maximum: LIMITS.maxKeyConcurrency,
    nullable: true,
    description: 'at most this many active jobs per concurrency key, across all workers (a key override replaces it for one key); null = none',
  })
  @IsOptional()
  @IntInRange(1, LIMITS.maxKeyConcurrency)
  keyConcurrency?: number | null;

  @ApiPropertyOptional({ type: KeyRateLimitDto, nullable: true, description: 'at most max starts per key in any window of durationMs (a key override replaces it for one key); null = none' })
  @IsOptional()
  @IsObject({ message: 'must be an object or null' })
  @ValidateNested()
  @Type(() => KeyRateLimitDto)
  keyRateLimit?: KeyRateLimitDto | null;

  @ApiPropertyOptional({
    enum: FAIRNESS,
    nullable: true,
    description:
      'how claims pick among keys: round_robin rotates over the keys with ready jobs (priority orders the jobs inside a key), fifo takes the best job of any key; null = back to the default (fifo until the queue has had a keyed job, then round_robin)',
  })
  @IsOptional()
  @IsIn(FAIRNESS as Fairness[], { message: `must be one of ${FAIRNESS.join(', ')} or null` })
  fairness?: Fairness | null;

  @ApiPropertyOptional({
    type: 'integer',
    minimum: LIMITS.minAgingMs,
    maximum: LIMITS.maxAgingMs,
    nullable: true,
    description: "a waiting job's effective priority rises by 1 per agingMs (up to 100); null = no aging",
  })
  @IsOptional()
  @IntInRange(LIMITS.minAgingMs, LIMITS.maxAgingMs)
  agingMs?: number | null;

  @ApiPropertyOptional({
    description: 'GET /jobs?payload= searches of this queue use an index of its own (a partial GIN index on jobs.payload, built in the background): only this queue\'s rows pay for it',
  })
  @ValidateIf((o: ConfigureQueueDto) => o.payloadSearch !== undefined)
  @IsBoolean()
  payloadSearch?: boolean;

  @ApiPropertyOptional({
    description:
      "failure summaries by a model (API.md v1.3) may send this queue's payload values (up to 3 sample payloads; a value under a secret-looking key never): default false, only keys and value types",
  })
  @ValidateIf((o: ConfigureQueueDto) => o.summaryIncludesPayload !== undefined)
  @IsBoolean()
  summaryIncludesPayload?: boolean;
}
