import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { Type } from 'class-transformer';
import { ArrayMaxSize, ArrayMinSize, IsArray, IsIn, IsOptional, IsString, Length, Matches, ValidateNested } from 'class-validator';
import { FLOW_LIMITS } from '../../core/flow-graph';
import { EnqueueJobDto } from '../../jobs/dto/enqueue-job.dto';

const REF_RULE = `must match ${FLOW_LIMITS.refPattern.source}`;

/**
 * One job of a `POST /flows` body (API.md v1.2 "Workflows"): the `POST /jobs`
 * fields (same rules; `idempotencyKey` and `debounce` are refused in a flow,
 * src/core/flow-graph.ts) plus its ref, the refs it depends on and its
 * failure policy. The graph (unique refs, known refs, no cycle) is checked by
 * normalizeFlow after these rules.
 */
export class FlowJobDto extends EnqueueJobDto {
  @ApiProperty({ pattern: FLOW_LIMITS.refPattern.source, description: 'names the job within this request; unique', example: 'extract' })
  @IsString()
  @Matches(FLOW_LIMITS.refPattern, { message: REF_RULE })
  ref!: string;

  @ApiPropertyOptional({
    type: [String],
    maxItems: FLOW_LIMITS.maxDependsOn,
    description: 'refs of this request that must end first (no duplicates, not its own ref, no cycle)',
    example: ['extract'],
  })
  @IsOptional()
  @IsArray()
  @ArrayMaxSize(FLOW_LIMITS.maxDependsOn)
  @IsString({ each: true })
  dependsOn?: string[];

  @ApiPropertyOptional({
    enum: ['cancel', 'run'],
    default: 'cancel',
    description: 'a dependency failed or cancelled: cancel this job (reason dependency_failed, and down the graph), or run it once every dependency has ended',
  })
  @IsOptional()
  @IsIn(['cancel', 'run'])
  onDependencyFailure?: 'cancel' | 'run';
}

/**
 * The `POST /flows` body: 1..1000 jobs, all validated (graph included) before
 * any is created, and the flow's own idempotency key (API.md v1.3).
 */
export class CreateFlowDto {
  @ApiProperty({ type: [FlowJobDto], minItems: 1, maxItems: FLOW_LIMITS.maxJobs })
  @IsArray()
  @ArrayMinSize(1)
  @ArrayMaxSize(FLOW_LIMITS.maxJobs)
  @ValidateNested({ each: true })
  @Type(() => FlowJobDto)
  jobs!: FlowJobDto[];

  @ApiPropertyOptional({
    minLength: 1,
    maxLength: FLOW_LIMITS.maxIdempotencyKeyLength,
    description:
      "per project: the same key and body within IDEMPOTENCY_TTL_MS answer the flow it created (200, Idempotent-Replayed), also while that flow is still being submitted (503 until it is complete); the same key with another body: 409. Taken before anything of the flow is written, so a retry after a 503 or a timeout never makes a second flow",
    example: 'nightly-import-2026-12-05',
  })
  @IsOptional()
  @IsString()
  @Length(1, FLOW_LIMITS.maxIdempotencyKeyLength)
  idempotencyKey?: string;
}
