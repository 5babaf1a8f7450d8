import { Inject, Injectable } from '@nestjs/common';
import { v7 as uuidv7 } from 'uuid';
import type { SluiceConfig } from '../config/config';
import { LOGGER, SLUICE_CONFIG } from '../config/config.module';
import { JobNotFoundError, WrongStateError } from '../core/errors';
import type { NormalizedFlowJob } from '../core/flow-graph';
import type { Job, Json } from '../core/job';
import type { JobStatus } from '../core/job-status';
import { FlowRecordStore, JobStore } from '../core/ports';
import type { JobTrace } from '../core/trace-context';
import { createdJob, JobsService } from '../jobs/jobs.service';
import { WaitingCap } from '../jobs/waiting-cap';
import type { Logger } from '../logging/logger';
import type { CreateFlowBody } from './dto/create-flow.pipe';
import { flowInput, typesRefused } from './flow-input';
import { type PlacedFlowJob, submitFlow } from './submit-flow';

/** One job of a new flow as POST /flows answers it: the job, its ref and the ids it waits for. */
export type CreatedFlowJob = { job: Job; ref: string; dependsOn: string[] };

/**
 * `POST /flows` (API.md v1.2 "Workflows"; docs/workflows.md): validates the
 * whole flow, then submits it through the stores ({@link submitFlow}: the
 * record with the refs, every queue watched, each queue's jobs created
 * `blocked`, then the roots unblocked).
 *
 * All or nothing: nothing is written before the body (graph, types, payloads)
 * and the waiting cap have passed. A failure after the record was written
 * rolls back: the record is deleted first (so no outcome can release a job
 * any more), then every job of the flow is cancelled (a job never created
 * answers not found; an already unblocked root that a worker claimed gets a
 * cancel request) and the error is answered. See docs/api.md "Workflows".
 */
@Injectable()
export class FlowsService {
  constructor(
    @Inject(SLUICE_CONFIG) private readonly config: SluiceConfig,
    @Inject(LOGGER) private readonly log: Logger,
    private readonly store: JobStore,
    private readonly flows: FlowRecordStore,
    private readonly jobs: JobsService,
    private readonly cap: WaitingCap,
  ) {}

  /**
   * @param project the caller's project: every queue is qualified with it.
   * @throws ValidationError (400) naming every bad `jobs.<i>.<field>` (nothing written);
   *   PayloadTooLargeError (413); RateLimitedError (429) past PROJECT_MAX_WAITING, counting
   *   every job of the flow (nothing written); whatever a store throws (rolled back).
   */
  async create(body: CreateFlowBody, project: string, trace?: JobTrace | null): Promise<{ flowId: string; jobs: CreatedFlowJob[] }> {
    const flow = flowInput(body, project, this.config.maxPayloadBytes);
    const details: { path: string; message: string }[] = [];
    await this.jobs.checkTypes(flow.jobs, true, details);
    if (details.length) throw typesRefused(details);
    this.cap.admit(project, flow.jobs.length);

    // UUIDv7 ids made in request order sort in request order (GET /flows/:id lists them so).
    const flowId = uuidv7();
    const idOf = new Map(flow.jobs.map((j) => [j.ref, uuidv7()]));
    const queueOf = new Map(flow.jobs.map((j) => [j.ref, j.queue]));
    const placed = flow.jobs.map((j): PlacedFlowJob & { id: string; src: NormalizedFlowJob } => ({
      ...j,
      id: idOf.get(j.ref) as string,
      src: j,
      flow: {
        flowId,
        jobId: idOf.get(j.ref) as string,
        ref: j.ref,
        onDependencyFailure: j.onDependencyFailure,
        dependsOn: j.dependsOn.map((r) => ({ ref: r, id: idOf.get(r) as string, queue: queueOf.get(r) as string })),
      },
    }));
    const jobs: Job[] = [];
    try {
      const created = await submitFlow({ jobs: this.store, flows: this.flows }, flowId, project, placed, trace);
      // A root has moved on (waiting, delayed, maybe claimed already): read back; the others are blocked as created.
      const live = await Promise.all(placed.map((p) => (p.src.dependsOn.length === 0 ? this.store.getJob(p.queue, p.id) : null)));
      placed.forEach((p, i) => {
        const r = created.get(p.id)!;
        // The payload as sent (its JSON is the one stored): no parse of every payload again.
        jobs.push(live[i] ?? createdJob(p.id, r.status as JobStatus, p, body.jobs[i].payload as Record<string, Json> | undefined, r.created!));
      });
    } catch (e) {
      await this.rollBack(flowId, placed);
      throw e;
    }
    return { flowId, jobs: jobs.map((job, i) => ({ job, ref: placed[i].src.ref, dependsOn: placed[i].flow!.dependsOn.map((d) => d.id) })) };
  }

  /**
   * Undoes a submission that failed midway: the record goes first (no
   * outcome releases anything after), then every job of the flow is
   * cancelled (never created: not found; already ended: left). Failures here
   * are logged, not thrown: the caller answers the original error.
   */
  private async rollBack(flowId: string, placed: { id: string; queue: string }[]): Promise<void> {
    const problems: string[] = [];
    await this.flows.discard(flowId).catch((e: Error) => problems.push(`record: ${e.message}`));
    const outcomes = await Promise.allSettled(placed.map((p) => this.store.cancel(p.queue, p.id)));
    outcomes.forEach((o, i) => {
      if (o.status === 'rejected' && !(o.reason instanceof JobNotFoundError) && !(o.reason instanceof WrongStateError)) problems.push(`${placed[i].id}: ${(o.reason as Error).message}`);
    });
    if (problems.length) this.log.warn({ flowId, problems: problems.slice(0, 10), count: problems.length }, 'POST /flows rolled back incompletely: these jobs may stay blocked (never released)');
  }
}
