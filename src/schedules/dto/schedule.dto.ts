import { DecimalInt } from '../../http/validation';
import { ApiProperty, ApiPropertyOptional, PartialType, PickType } from '@nestjs/swagger';
import { Type } from 'class-transformer';
import { IsBoolean, IsInt, IsISO8601, IsObject, IsOptional, IsString, Length, Max, Min, ValidateNested } from 'class-validator';
import { LIMITS } from '../../core/job-options';
import { BackoffDto, EnqueueJobDto, IsFlowKey } from '../../jobs/dto/enqueue-job.dto';

/**
 * The `POST /schedules` body (API.md "Schedules (cron)"). The job fields
 * follow `POST /jobs`; cron and time zone are checked by the service
 * (core/schedule-slots.ts), so a 400 names `cron` or `timezone`.
 */
export class CreateScheduleDto extends PickType(EnqueueJobDto, ['queue', 'type', 'payload', 'priority'] as const) {
  @ApiProperty({ minLength: 1, maxLength: 200, description: 'unique' })
  @IsString()
  @Length(1, 200)
  name!: string;

  @ApiProperty({ example: '0 9 * * 1-5', description: '5 fields (minute hour day-of-month month day-of-week) or 6 (leading seconds)' })
  @IsString()
  cron!: string;

  @ApiPropertyOptional({ example: 'Europe/Berlin', default: 'UTC', description: 'IANA time zone' })
  @IsOptional()
  @IsString()
  timezone?: string;

  @ApiPropertyOptional({ type: 'integer', minimum: 1, maximum: 100, nullable: true, description: "null = the queue's default" })
  @IsOptional()
  @IsInt()
  @Min(LIMITS.minAttempts)
  @Max(LIMITS.maxAttempts)
  maxAttempts?: number | null;

  @ApiPropertyOptional({ type: BackoffDto, nullable: true })
  @IsOptional()
  @IsObject({ message: 'must be an object' })
  @ValidateNested()
  @Type(() => BackoffDto)
  backoff?: BackoffDto | null;

  @ApiPropertyOptional({ type: 'integer', minimum: 1, maximum: LIMITS.maxTimeoutMs, nullable: true, description: "ms; null = the queue's default" })
  @IsOptional()
  @IsInt()
  @Min(1)
  @Max(LIMITS.maxTimeoutMs)
  timeoutMs?: number | null;

  @ApiPropertyOptional({
    type: 'string',
    minLength: 1,
    maxLength: LIMITS.maxFlowKeyLength,
    nullable: true,
    description: "the concurrency key of the jobs it enqueues (API.md v1.1 flow control per key); null = none",
    example: 'nightly-report',
  })
  @IsOptional()
  @IsFlowKey()
  concurrencyKey?: string | null;

  @ApiPropertyOptional({ default: true })
  @IsOptional()
  @IsBoolean()
  enabled?: boolean;
}

/**
 * The `PATCH /schedules/:id` body: any field of the POST body; omitted fields
 * keep their value; `null` resets maxAttempts, backoff or timeoutMs to the
 * queue's/process's default, and removes the concurrencyKey.
 */
export class UpdateScheduleDto extends PartialType(CreateScheduleDto) {}

/** `GET /schedules/preview` query. */
export class PreviewQueryDto {
  @ApiProperty({ example: '30 2 * * *' })
  @IsString()
  cron!: string;

  @ApiPropertyOptional({ default: 'UTC' })
  @IsOptional()
  @IsString()
  timezone?: string;

  @ApiPropertyOptional({ format: 'date-time', description: 'runs at or after this time; default now' })
  @IsOptional()
  @IsISO8601({ strict: true }, { message: 'must be an ISO-8601 time' })
  from?: string;

  @ApiPropertyOptional({ type: 'integer', minimum: 1, maximum: 100, default: 5 })
  @IsOptional()
  @DecimalInt()
  @IsInt()
  @Min(1)
  @Max(100)
  count?: number;
}
