import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { Type } from 'class-transformer';
import {
  Allow,
  ArrayMaxSize,
  IsArray,
  IsBoolean,
  IsInt,
  IsObject,
  IsOptional,
  IsString,
  Length,
  Max,
  MaxLength,
  Min,
  ValidateBy,
  ValidateIf,
  ValidateNested,
} from 'class-validator';
import { LIMITS } from '../../../core/job-options';
import { ApiJsonProperty } from '../../../http/openapi/decorators';
import { IntInRange } from '../../../http/validation';
import { CLAIM_LIMITS } from './claim.dto';

/** Largest serialized `progress` object, bytes (API.md: "a small JSON object"). */
export const MAX_PROGRESS_BYTES = 8192;
/** Log lines per heartbeat, and characters per line. */
export const MAX_LOG_LINES = 100;
export const MAX_LOG_LINE_CHARS = 8192;
/** Characters of a failure's message and stack. */
export const MAX_ERROR_CHARS = 65_536;

/** `progress`: a number 0..100 or a JSON object of at most {@link MAX_PROGRESS_BYTES}. */
function IsProgress(): PropertyDecorator {
  return ValidateBy({
    name: 'isProgress',
    validator: {
      validate: (v: unknown) =>
        (typeof v === 'number' && Number.isFinite(v) && v >= 0 && v <= 100) ||
        (typeof v === 'object' && v !== null && !Array.isArray(v) && Buffer.byteLength(JSON.stringify(v)) <= MAX_PROGRESS_BYTES),
      defaultMessage: () => `must be a number 0..100 or a JSON object of at most ${MAX_PROGRESS_BYTES} bytes`,
    },
  });
}

/** Fields every lease call carries. */
export class LeaseDto {
  @ApiProperty({ description: 'the lockToken the claim returned' })
  @IsString()
  @Length(1, 200)
  lockToken!: string;
}

/** The `POST /jobs/:id/heartbeat` body. */
export class HeartbeatDto extends LeaseDto {
  @ApiJsonProperty('a number 0..100 or a JSON object of at most 8192 bytes', { oneOf: [{ type: 'number', minimum: 0, maximum: 100 }, { type: 'object', additionalProperties: {} }] })
  @ValidateIf((o: HeartbeatDto) => o.progress !== undefined)
  @IsProgress()
  progress?: number | Record<string, unknown>;

  @ApiPropertyOptional({ type: [String], maxItems: MAX_LOG_LINES, description: 'log lines (level info), shown by GET /jobs/:id/logs' })
  @IsOptional()
  @IsArray()
  @ArrayMaxSize(MAX_LOG_LINES)
  @IsString({ each: true })
  @MaxLength(MAX_LOG_LINE_CHARS, { each: true })
  logs?: string[];

  @ApiPropertyOptional({ type: 'integer', minimum: CLAIM_LIMITS.minLeaseMs, maximum: CLAIM_LIMITS.maxLeaseMs, description: 'new lease length from now, ms; default the claim\'s leaseMs, else LOCK_TTL_MS' })
  @IsOptional()
  @IsInt()
  @Min(CLAIM_LIMITS.minLeaseMs)
  @Max(CLAIM_LIMITS.maxLeaseMs)
  leaseMs?: number;
}

/** The `POST /jobs/:id/complete` body. */
export class CompleteDto extends LeaseDto {
  @ApiJsonProperty('any JSON value (null included); at most MAX_PAYLOAD_BYTES serialized', { nullable: true })
  @Allow()
  result?: unknown;
}

/** The `error` of a failure report. */
export class FailErrorDto {
  @ApiProperty({ maxLength: MAX_ERROR_CHARS, description: 'becomes the job\'s lastError' })
  @IsString()
  @Length(1, MAX_ERROR_CHARS)
  message!: string;

  @ApiPropertyOptional({ maxLength: MAX_ERROR_CHARS, description: 'kept as an error-level log line of the attempt' })
  @IsOptional()
  @IsString()
  @MaxLength(MAX_ERROR_CHARS)
  stack?: string;
}

/** The `POST /jobs/:id/fail` body. */
export class FailDto extends LeaseDto {
  @ApiProperty({ type: FailErrorDto })
  @IsObject({ message: 'must be an object' })
  @ValidateNested()
  @Type(() => FailErrorDto)
  error!: FailErrorDto;

  @ApiPropertyOptional({ default: true, description: 'false: straight to the dead-letter queue, whatever attempts are left' })
  @ValidateIf((o: FailDto) => o.retryable !== undefined)
  @IsBoolean()
  retryable?: boolean;
}

/** The `POST /jobs/:id/release` body (API.md v1.2). */
export class ReleaseDto extends LeaseDto {
  @ApiPropertyOptional({
    type: 'integer',
    minimum: 0,
    maximum: LIMITS.maxDelayMs,
    description: 'ms before the job may run again (it is delayed until then); default 0: waiting at once',
  })
  @IsOptional()
  @IntInRange(0, LIMITS.maxDelayMs)
  delayMs?: number;
}
