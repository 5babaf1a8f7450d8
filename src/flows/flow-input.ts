import { NormalizedFlow, normalizeFlow } from '../core/flow-graph';
import { ValidationError } from '../core/errors';
import { qualify } from '../core/project-queue';
import { toInput } from '../jobs/jobs.service';
import type { CreateFlowBody } from './dto/create-flow.pipe';

/**
 * A `POST /flows` body (its DTO rules passed: CreateFlowPipe) as a validated
 * graph: each job's fields as POST /jobs reads them (toInput: `runAt` ISO →
 * ms, `null` = absent), then normalizeFlow (refs, dependsOn, cycles,
 * payloads, idempotencyKey and debounce refused), queues qualified with
 * `project` (src/core/project-queue.ts).
 * @throws ValidationError (400) naming every bad `jobs.<i>.<field>`; PayloadTooLargeError (413).
 */
export function flowInput(body: CreateFlowBody, project: string, maxPayloadBytes: number): NormalizedFlow {
  const jobs = body.jobs.map((j) => ({ ...toInput(j), ref: j.ref, dependsOn: j.dependsOn, onDependencyFailure: j.onDependencyFailure }));
  const flow = normalizeFlow({ jobs }, maxPayloadBytes);
  return { ...flow, jobs: flow.jobs.map((j) => ({ ...j, queue: qualify(project, j.queue) })) };
}

/** The 400 of a flow whose jobs name unknown types (JobsService.checkTypes details). */
export function typesRefused(details: { path: string; message: string }[]): ValidationError {
  return new ValidationError(`invalid flow: ${details.map((d) => d.path).join(', ')}`, details);
}
