import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { IsInt, IsOptional, IsString, Length, Max, Min } from 'class-validator';

/** Bounds of the claim body (API.md "External worker protocol"). */
export const CLAIM_LIMITS = Object.freeze({
  maxJobs: 100,
  maxWaitMs: 30_000,
  minLeaseMs: 100,
  maxLeaseMs: 86_400_000,
});

/** The `POST /queues/:name/claim` body. */
export class ClaimDto {
  @ApiProperty({ minLength: 1, maxLength: 200, description: 'the caller; recorded on the job and its events' })
  @IsString()
  @Length(1, 200)
  workerId!: string;

  @ApiPropertyOptional({ type: 'integer', minimum: 1, maximum: CLAIM_LIMITS.maxJobs, default: 1 })
  @IsOptional()
  @IsInt()
  @Min(1)
  @Max(CLAIM_LIMITS.maxJobs)
  max?: number;

  @ApiPropertyOptional({ type: 'integer', minimum: 0, maximum: CLAIM_LIMITS.maxWaitMs, default: 0, description: 'long poll: how long to wait for a job when none is ready, ms' })
  @IsOptional()
  @IsInt()
  @Min(0)
  @Max(CLAIM_LIMITS.maxWaitMs)
  waitMs?: number;

  @ApiPropertyOptional({ type: 'integer', minimum: CLAIM_LIMITS.minLeaseMs, maximum: CLAIM_LIMITS.maxLeaseMs, description: 'lease length, ms; default LOCK_TTL_MS' })
  @IsOptional()
  @IsInt()
  @Min(CLAIM_LIMITS.minLeaseMs)
  @Max(CLAIM_LIMITS.maxLeaseMs)
  leaseMs?: number;
}
