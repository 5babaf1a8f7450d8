import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { Type } from 'class-transformer';
import { ArrayMaxSize, ArrayMinSize, IsArray, IsIn, IsOptional, IsString, Matches, ValidateNested } from 'class-validator';
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

/** The `POST /flows` body: 1..1000 jobs, all validated (graph included) before any is created. */
export class CreateFlowDto {
  @ApiProperty({ type: [FlowJobDto], minItems: 1, maxItems: FLOW_LIMITS.maxJobs })
  @IsArray()
  @ArrayMinSize(1)
  @ArrayMaxSize(FLOW_LIMITS.maxJobs)
  @ValidateNested({ each: true })
  @Type(() => FlowJobDto)
  jobs!: FlowJobDto[];
}
