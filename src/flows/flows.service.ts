import { Inject, Injectable } from '@nestjs/common';
import { v7 as uuidv7 } from 'uuid';
import type { SluiceConfig } from '../config/config';
import { LOGGER, SLUICE_CONFIG } from '../config/config.module';
import { FlowNotFoundError, IdempotencyConflictError, JobNotFoundError, WrongStateError } from '../core/errors';
import type { NormalizedFlowJob } from '../core/flow-graph';
import type { Job, Json } from '../core/job';
import type { JobStatus } from '../core/job-status';
import { FlowRecordStore, JobStore } from '../core/ports';
import type { EnqueueResult } from '../core/ports/jobs';
import type { JobTrace } from '../core/trace-context';
import { createdJob, JobsService } from '../jobs/jobs.service';
import { WaitingCap } from '../jobs/waiting-cap';
import type { Logger } from '../logging/logger';
import type { CreateFlowBody } from './dto/create-flow.pipe';
import { HistoryQueries } from '../history';
import { mapError } from '../http/error-envelope';
import { flowUnavailable, notYetSubmitted, type RollbackOutcome, submissionFailed } from './flow-failure';
import { flowInput, typesRefused } from './flow-input';
import { FlowViewService } from './flow-view.service';
import { FlowIdTakenError, type PlacedFlowJob, submitFlow } from './submit-flow';

/** One job of a new flow as POST /flows answers it: the job, its ref and the ids it waits for. */
export type CreatedFlowJob = { job: Job; ref: string; dependsOn: string[] };

/** What POST /flows answers: the flow, and whether its idempotencyKey replayed an existing one (200). */
export type CreatedFlow = { flowId: string; jobs: CreatedFlowJob[]; replayed: boolean };

/** Jobs the rollback names in its 503 at most (the count says how many in all). */
const UNSURE_SHOWN = 5;

/**
 * `POST /flows` (API.md v1.2 "Workflows", v1.3 idempotencyKey; docs/workflows.md):
 * validates the whole flow, then submits it through the stores ({@link submitFlow}:
 * the record with the refs, every queue watched, each queue's jobs created
 * `blocked`, then the roots unblocked).
 *
 * With an `idempotencyKey`, the key is taken for the new flow's id before
 * anything is written (FlowRecordStore.claimKey, the job keys' mechanism):
 * a request finding it taken with the same body answers that flow (200,
 * replayed) once it is complete — every job created and no root blocked —
 * and 503 naming it until then; with another body, 409.
 *
 * All or nothing: nothing is written before the body (graph, types, payloads)
 * and the waiting cap have passed. A failure after the record was written
 * rolls back: the record is deleted first (so no outcome can release a job
 * any more), then every job of the flow is cancelled, and each job the cancel
 * did not find is looked for in PostgreSQL. The 503 says "submit again" (and
 * frees the key) only when that confirmed none of its jobs will run; else it
 * says the flow may exist in part. Every 503 names the flow id in `details`.
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
    private readonly view: FlowViewService,
    private readonly history: HistoryQueries,
  ) {}

  /**
   * @param project the caller's project: every queue is qualified with it.
   * @param onFlowId called with the flow's id as soon as it is known (a new
   *   one, or the one a replayed key names): the answer deadline's advice.
   * @throws ValidationError (400) naming every bad `jobs.<i>.<field>` (nothing written);
   *   PayloadTooLargeError (413); RateLimitedError (429) past PROJECT_MAX_WAITING, counting
   *   every job of the flow (nothing written); IdempotencyConflictError (409) for a key
   *   used with another body; UnavailableError (503, `details` naming the flow id) when
   *   the store failed after the record was written (rolled back: its message says what
   *   is left) or a replayed key's flow is not complete yet; a store's other errors.
   */
  async create(body: CreateFlowBody, project: string, trace?: JobTrace | null, onFlowId?: (flowId: string) => void): Promise<CreatedFlow> {
    const flow = flowInput(body, project, this.config.maxPayloadBytes);
    const details: { path: string; message: string }[] = [];
    await this.jobs.checkTypes(flow.jobs, true, details);
    if (details.length) throw typesRefused(details);
    this.cap.admit(project, flow.jobs.length);

    // UUIDv7 ids made in request order sort in request order (GET /flows/:id lists them so).
    const flowId = uuidv7();
    const key = body.idempotencyKey;
    if (key !== undefined) {
      const claim = await this.flows.claimKey(project, key, flowId, flow.jobs, this.config.idempotencyTtlMs);
      if (!claim.claimed) {
        if (!claim.sameBody) throw new IdempotencyConflictError(key);
        onFlowId?.(claim.flowId);
        return { ...(await this.replay(claim.flowId, project, flow.jobs.length)), replayed: true };
      }
    }
    onFlowId?.(flowId);
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
    const confirmed = new Set<string>();
    let created: Map<string, EnqueueResult>;
    try {
      created = await submitFlow({ jobs: this.store, flows: this.flows }, flowId, project, placed, trace, confirmed);
    } catch (e) {
      throw await this.failed(e, flowId, project, key, placed, confirmed);
    }
    // Submitted: from here on nothing is undone. A root has moved on (waiting, delayed, maybe
    // claimed already): read back; one that cannot be read is rendered as the move left it.
    const live = await Promise.all(placed.map((p) => (p.src.dependsOn.length === 0 ? this.store.getJob(p.queue, p.id).catch(() => null) : null)));
    const jobs = placed.map((p, i) => {
      const r = created.get(p.id)!;
      const moved: JobStatus = p.src.dependsOn.length ? (r.status as JobStatus) : r.created!.runAt > r.created!.createdAt ? 'delayed' : 'waiting';
      // The payload as sent (its JSON is the one stored): no parse of every payload again.
      const job = live[i] ?? createdJob(p.id, moved, p, body.jobs[i].payload as Record<string, Json> | undefined, r.created!);
      return { job, ref: p.src.ref, dependsOn: p.flow!.dependsOn.map((d) => d.id) };
    });
    return { flowId, jobs, replayed: false };
  }

  /**
   * The flow a replayed idempotencyKey names, as POST /flows answers it (each
   * job as it is now), once it is complete: all `count` jobs exist and no root
   * is still blocked (the last step of a submission unblocks the roots).
   * @throws UnavailableError (503 naming it) when it is not complete (yet).
   */
  private async replay(flowId: string, project: string, count: number): Promise<Omit<CreatedFlow, 'replayed'>> {
    const view = await this.view.get(flowId, project).catch((e: Error) => {
      if (e instanceof FlowNotFoundError) return null;
      throw e;
    });
    const complete = view && view.jobs.length === count && view.jobs.every((j) => j.status !== null && !(j.dependsOn.length === 0 && j.status === 'blocked'));
    if (!complete) throw notYetSubmitted(flowId);
    const jobs = await Promise.all(view.jobs.map((j) => this.jobs.get(j.id, project).catch(() => null)));
    if (jobs.some((j) => j === null)) throw notYetSubmitted(flowId);
    return { flowId, jobs: view.jobs.map((j, i) => ({ job: jobs[i]!, ref: j.ref ?? jobs[i]!.flowRef ?? '', dependsOn: j.dependsOn })) };
  }

  /**
   * A submission failed after its record may have been written: rolls back,
   * frees the idempotencyKey when nothing is left, and turns the failure into
   * the error to answer (a 503 saying what is left; another error as it was,
   * the rollback's findings logged).
   */
  private async failed(e: unknown, flowId: string, project: string, key: string | undefined, placed: { id: string; queue: string }[], confirmed: Set<string>): Promise<unknown> {
    if (e instanceof FlowIdTakenError) {
      // Nothing was written (another flow's record holds the id): the key, if any, is free again.
      if (key !== undefined) await this.flows.releaseKey(project, key, flowId).catch(() => false);
      return flowUnavailable(e.message, flowId);
    }
    const outcome = await this.rollBack(flowId, project, placed, confirmed);
    if (outcome.clean && key !== undefined) {
      const freed = await this.flows.releaseKey(project, key, flowId).catch(() => false);
      if (!freed) outcome.clean = false; // the key still names the flow: a retry would find it, not make it anew
    }
    const m = mapError(e);
    if (m.status !== 503) {
      this.log.warn({ flowId, clean: outcome.clean, unsure: outcome.unsureCount }, 'POST /flows failed after its record was written and was rolled back');
      return e;
    }
    return submissionFailed(flowId, placed.length, m.message, outcome, key !== undefined);
  }

  /**
   * Undoes a submission that failed midway: the record goes first (no
   * outcome releases anything after), then every job of the flow is
   * cancelled. A job is known gone when the cancel ended it before it started,
   * or when neither Redis nor PostgreSQL has it and its enqueue was never
   * confirmed (a confirmed job Redis does not have any more was lost with
   * Redis: PostgreSQL or a restore may bring it back). Never throws.
   */
  private async rollBack(flowId: string, project: string, placed: { id: string; queue: string }[], confirmed: Set<string>): Promise<RollbackOutcome> {
    const unsure: { id: string; why: string }[] = [];
    const recordKept = await this.flows.discard(flowId).then(
      () => false,
      () => true,
    );
    const outcomes = await Promise.allSettled(placed.map((p) => this.store.cancel(p.queue, p.id)));
    const missing: string[] = [];
    outcomes.forEach((o, i) => {
      const id = placed[i].id;
      if (o.status === 'fulfilled') {
        if (o.value !== 'cancelled') unsure.push({ id, why: `is ${o.value} (cancel requested)` });
      } else if (o.reason instanceof WrongStateError) {
        if (o.reason.status !== 'cancelled') unsure.push({ id, why: `is ${o.reason.status}` });
      } else if (o.reason instanceof JobNotFoundError) {
        if (confirmed.has(id)) unsure.push({ id, why: 'was created, and Redis lost it' });
        else missing.push(id);
      } else {
        unsure.push({ id, why: `could not be cancelled (${mapError(o.reason).message})` });
      }
    });
    if (missing.length) {
      // Not in Redis and never confirmed: gone, unless PostgreSQL has it (mirrored before Redis lost it).
      const rows = await this.history.flowJobs(flowId, project).then(
        (r) => new Set(r.map((x) => x.id)),
        () => null,
      );
      for (const id of missing) if (!rows || rows.has(id)) unsure.push({ id, why: rows ? 'is in PostgreSQL' : 'could not be looked for in PostgreSQL' });
    }
    const outcome: RollbackOutcome = { clean: !recordKept && unsure.length === 0, unsure: unsure.slice(0, UNSURE_SHOWN), unsureCount: unsure.length, recordKept };
    if (!outcome.clean) this.log.warn({ flowId, recordKept, unsure: outcome.unsure, count: unsure.length }, 'POST /flows rolled back incompletely: these jobs may stay (blocked jobs are never released)');
    return outcome;
  }
}
