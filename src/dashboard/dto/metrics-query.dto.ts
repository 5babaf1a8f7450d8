import { QueryIntInRange } from '../../http/validation';
import { ApiPropertyOptional } from '@nestjs/swagger';
import { IsOptional, IsString, Matches, MaxLength } from 'class-validator';
import { STEP_MAX_MS, STEP_MIN_MS } from '../../history/finish-series';
import { LIMITS } from '../../core/job-options';

/** `GET /dashboard/metrics` query (from/to are checked by src/core/time-range.ts, which names the field). */
export class MetricsQueryDto {
  @ApiPropertyOptional({ pattern: LIMITS.queuePattern.source, description: 'one queue (every queue when absent)' })
  @IsOptional()
  @IsString()
  @Matches(LIMITS.queuePattern, { message: `must match ${LIMITS.queuePattern.source}` })
  queue?: string;

  @ApiPropertyOptional({ description: 'ISO-8601 time; default `to` − 1 h; the range is at most 31 days' })
  @IsOptional()
  @IsString()
  @MaxLength(64)
  from?: string;

  @ApiPropertyOptional({ description: 'ISO-8601 time; default now' })
  @IsOptional()
  @IsString()
  @MaxLength(64)
  to?: string;

  @ApiPropertyOptional({ minimum: STEP_MIN_MS, maximum: STEP_MAX_MS, description: 'bucket width, ms; at most 2000 points; default: the smallest of 1 s, 5 s, 10 s, 30 s, 1 min, 5 min, … giving ≤ 300 points' })
  @IsOptional()
  @QueryIntInRange(STEP_MIN_MS, STEP_MAX_MS)
  stepMs?: number;
}
