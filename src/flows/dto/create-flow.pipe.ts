import { PipeTransform } from '@nestjs/common';
import { ValidationError } from '../../core/errors';
import { FLOW_LIMITS } from '../../core/flow-graph';
import { assign, check, Details, requireObject, toJobDto } from '../../jobs/dto/enqueue-body.pipe';
import { CreateFlowDto, FlowJobDto } from './create-flow.dto';

/**
 * Validation of the `POST /flows` body by the rules of `POST /jobs/batch`
 * (src/jobs/dto/enqueue-body.pipe.ts: the same DTO rules per job, unknown
 * fields refused at every level, the null rule), paths `jobs.<i>.<field>`.
 * The graph is the service's (normalizeFlow).
 * @throws ValidationError (400) with `{path, message}` per failed rule.
 */
export class CreateFlowPipe implements PipeTransform<unknown, CreateFlowDto> {
  transform(body: unknown): CreateFlowDto {
    requireObject(body);
    const extra: Details = [];
    const dto = assign(new CreateFlowDto(), body, '', extra);
    // Past the bound the array is refused as a whole: no job is looked at.
    if (Array.isArray(dto.jobs) && dto.jobs.length > FLOW_LIMITS.maxJobs) {
      throw new ValidationError('invalid flow: jobs', [{ path: 'jobs', message: `must be an array of 1..${FLOW_LIMITS.maxJobs} jobs` }]);
    }
    if (Array.isArray(dto.jobs)) dto.jobs = dto.jobs.map((j, i) => toJobDto(j, `jobs.${i}.`, extra, () => new FlowJobDto())) as FlowJobDto[];
    return check(dto, extra);
  }
}

/** Compile-time shape of a validated body (an interface, so Nest's global pipe leaves the parameter alone). */
export type CreateFlowBody = Pick<CreateFlowDto, keyof CreateFlowDto>;
