import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { Type } from 'class-transformer';
import {
  ArrayMaxSize,
  ArrayMinSize,
  IsArray,
  IsIn,
  IsInt,
  IsISO8601,
  IsObject,
  IsOptional,
  IsString,
  Length,
  Matches,
  Max,
  Min,
  ValidateBy,
  ValidateNested,
  ValidationOptions,
} from 'class-validator';
import { flowKeyProblem, LIMITS, NAMED_PRIORITIES } from '../../core/job-options';
import { IntInRange } from '../../http/validation';

/** The `priority` rule: an integer −100..100 or one of the named priorities (also ./enqueue-schema.ts). */
export function isPriority(v: unknown): boolean {
  return (typeof v === 'number' && Number.isInteger(v) && v >= LIMITS.minPriority && v <= LIMITS.maxPriority) || (typeof v === 'string' && Object.hasOwn(NAMED_PRIORITIES, v));
}

/** `priority`: {@link isPriority}. */
export function IsPriority(opts?: ValidationOptions): PropertyDecorator {
  return ValidateBy(
    {
      name: 'isPriority',
      validator: {
        validate: isPriority,
        defaultMessage: () => 'must be an integer -100..100 or "high", "normal", "low"',
      },
    },
    opts,
  );
}

/**
 * A flow-control key (a job's `concurrencyKey`, `debounce.key`): a string of
 * 1..128 characters, no NUL, no lone surrogate (src/core/job-options.ts flowKeyProblem).
 */
export function IsFlowKey(opts?: ValidationOptions): PropertyDecorator {
  return ValidateBy(
    {
      name: 'isFlowKey',
      validator: {
        validate: (v: unknown) => flowKeyProblem(v) === null,
        defaultMessage: (args) => flowKeyProblem(args?.value) ?? `must be a string of 1..${LIMITS.maxFlowKeyLength} characters`,
      },
    },
    opts,
  );
}

/**
 * The `debounce.maxWaitMs` rule: an integer from the `windowMs` sent (else
 * its minimum) up to one week. Shared by the DTO and the compiled validator
 * (./enqueue-schema.ts).
 */
export function isMaxWait(v: unknown, windowMs: unknown): boolean {
  const w = windowMs;
  const min = typeof w === 'number' && Number.isInteger(w) && w >= LIMITS.minDebounceWindowMs ? w : LIMITS.minDebounceWindowMs;
  return typeof v === 'number' && Number.isInteger(v) && v >= min && v <= LIMITS.maxDebounceMaxWaitMs;
}

/** `debounce.maxWaitMs`: {@link isMaxWait}. */
function IsMaxWait(opts?: ValidationOptions): PropertyDecorator {
  return ValidateBy(
    {
      name: 'isMaxWait',
      validator: {
        validate: (v: unknown, args) => isMaxWait(v, (args?.object as { windowMs?: unknown } | undefined)?.windowMs),
        defaultMessage: () => `must be an integer windowMs..${LIMITS.maxDebounceMaxWaitMs}`,
      },
    },
    opts,
  );
}

/** `debounce` (API.md v1.2): one job per key while it is not claimed yet. Unknown fields are rejected. */
export class DebounceDto {
  @ApiProperty({ minLength: 1, maxLength: LIMITS.maxFlowKeyLength, description: 'the debounce key, per queue', example: 'reindex:customer-42' })
  @IsFlowKey()
  key!: string;

  @ApiProperty({
    type: 'integer',
    minimum: LIMITS.minDebounceWindowMs,
    maximum: LIMITS.maxDebounceWindowMs,
    description: 'ms: the job runs this long after the last enqueue with its key (runAt = now + windowMs at each one)',
    example: 5000,
  })
  @IntInRange(LIMITS.minDebounceWindowMs, LIMITS.maxDebounceWindowMs)
  windowMs!: number;

  @ApiPropertyOptional({
    type: 'integer',
    minimum: LIMITS.minDebounceWindowMs,
    maximum: LIMITS.maxDebounceMaxWaitMs,
    description: 'ms, ≥ windowMs: runAt never later than the first enqueue + maxWaitMs; absent = no bound',
  })
  @IsOptional()
  @IsMaxWait()
  maxWaitMs?: number;
}

/** Retry backoff (API.md); omitted fields take the defaults (exponential, 2000, 3600000, equal). */
export class BackoffDto {
  @ApiPropertyOptional({ enum: ['fixed', 'linear', 'exponential'] })
  @IsOptional()
  @IsIn(['fixed', 'linear', 'exponential'])
  type?: 'fixed' | 'linear' | 'exponential';

  @ApiPropertyOptional({ type: 'integer', minimum: 0, maximum: LIMITS.maxBackoffDelayMs, description: 'ms' })
  @IsOptional()
  @IsInt()
  @Min(0)
  @Max(LIMITS.maxBackoffDelayMs)
  delayMs?: number;

  @ApiPropertyOptional({ type: 'integer', minimum: 0, maximum: LIMITS.maxBackoffDelayMs, description: 'ms, ≥ delayMs' })
  @IsOptional()
  @IsInt()
  @Min(0)
  @Max(LIMITS.maxBackoffDelayMs)
  maxDelayMs?: number;

  @ApiPropertyOptional({ enum: ['none', 'full', 'equal'] })
  @IsOptional()
  @IsIn(['none', 'full', 'equal'])
  jitter?: 'none' | 'full' | 'equal';
}

/** The `POST /jobs` body (API.md "Jobs"). Unknown fields are rejected. */
export class EnqueueJobDto {
  @ApiProperty({ pattern: LIMITS.typePattern.source, example: 'send_email' })
  @IsString()
  @Matches(LIMITS.typePattern, { message: `must match ${LIMITS.typePattern.source}` })
  type!: string;

  @ApiPropertyOptional({ type: 'object', additionalProperties: true, default: {}, description: 'any JSON object; serialized ≤ MAX_PAYLOAD_BYTES', example: { to: 'ada@example.com' } })
  @IsOptional()
  @IsObject({ message: 'must be a JSON object' })
  payload?: Record<string, unknown>;

  @ApiPropertyOptional({ pattern: LIMITS.queuePattern.source, default: 'default' })
  @IsOptional()
  @IsString()
  @Matches(LIMITS.queuePattern, { message: `must match ${LIMITS.queuePattern.source}` })
  queue?: string;

  @ApiPropertyOptional({ oneOf: [{ type: 'integer', minimum: -100, maximum: 100 }, { type: 'string', enum: ['high', 'normal', 'low'] }], default: 0 })
  @IsOptional()
  @IsPriority()
  priority?: number | 'high' | 'normal' | 'low';

  @ApiPropertyOptional({ type: 'integer', minimum: 0, maximum: LIMITS.maxDelayMs, description: 'ms; exclusive with runAt' })
  @IsOptional()
  @IsInt()
  @Min(0)
  @Max(LIMITS.maxDelayMs)
  delayMs?: number;

  @ApiPropertyOptional({ format: 'date-time', description: 'ISO time; past times run now; exclusive with delayMs' })
  @IsOptional()
  @IsISO8601({ strict: true }, { message: 'must be an ISO-8601 time' })
  runAt?: string;

  @ApiPropertyOptional({ type: 'integer', minimum: 1, maximum: 100, description: "default: the queue's, else MAX_RETRIES" })
  @IsOptional()
  @IsInt()
  @Min(LIMITS.minAttempts)
  @Max(LIMITS.maxAttempts)
  maxAttempts?: number;

  @ApiPropertyOptional({ type: BackoffDto, description: 'default exponential, 2000, 3600000, equal' })
  @IsOptional()
  @IsObject({ message: 'must be an object' })
  @ValidateNested()
  @Type(() => BackoffDto)
  backoff?: BackoffDto;

  @ApiPropertyOptional({ type: 'integer', minimum: 1, maximum: LIMITS.maxTimeoutMs, description: "ms; default: the queue's, else 600000" })
  @IsOptional()
  @IsInt()
  @Min(1)
  @Max(LIMITS.maxTimeoutMs)
  timeoutMs?: number;

  @ApiPropertyOptional({ minLength: 1, maxLength: 255, description: 'per queue: the same key and body within IDEMPOTENCY_TTL_MS answer the existing job (200, Idempotent-Replayed)' })
  @IsOptional()
  @IsString()
  @Length(1, LIMITS.maxIdempotencyKeyLength)
  idempotencyKey?: string;

  @ApiPropertyOptional({
    minLength: 1,
    maxLength: LIMITS.maxFlowKeyLength,
    description: "the job's concurrency key (e.g. a customer id): the queue's keyConcurrency, keyRateLimit and fairness apply per key",
    example: 'customer-42',
  })
  @IsOptional()
  @IsFlowKey()
  concurrencyKey?: string;

  @ApiPropertyOptional({
    type: DebounceDto,
    description: 'while a job of this queue holds the key and is not claimed yet, an enqueue with the key updates that job (200, Sluice-Debounced) instead of creating one; exclusive with idempotencyKey',
  })
  @IsOptional()
  @IsObject({ message: 'must be an object {key, windowMs, maxWaitMs?}' })
  @ValidateNested()
  @Type(() => DebounceDto)
  debounce?: DebounceDto;
}

/** The `POST /jobs/batch` body: 1..1000 jobs, all validated before any is enqueued. */
export class EnqueueBatchDto {
  @ApiProperty({ type: [EnqueueJobDto], minItems: 1, maxItems: 1000 })
  @IsArray()
  @ArrayMinSize(1)
  @ArrayMaxSize(1000)
  @ValidateNested({ each: true })
  @Type(() => EnqueueJobDto)
  jobs!: EnqueueJobDto[];
}
