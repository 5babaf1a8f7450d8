import { ApiProperty, ApiPropertyOptional, PickType } from '@nestjs/swagger';
import { Type } from 'class-transformer';
import { IsBoolean, IsInt, IsObject, IsOptional, Max, Min, ValidateIf, ValidateNested } from 'class-validator';
import { LIMITS } from '../../core/job-options';
import { EnqueueJobDto } from '../../jobs/dto/enqueue-job.dto';

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
    description: 'GET /jobs?payload= searches of this queue use an index of its own (a partial GIN index on jobs.payload, built in the background): only this queue\'s rows pay for it',
  })
  @ValidateIf((o: ConfigureQueueDto) => o.payloadSearch !== undefined)
  @IsBoolean()
  payloadSearch?: boolean;
}
