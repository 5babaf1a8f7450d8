import { Injectable } from '@nestjs/common';
import { FlowNotFoundError, JobNotFoundError, WrongStateError } from '../core/errors';
import type { Json } from '../core/job';
import { isTerminal, JobStatus } from '../core/job-status';
import { FlowRecordStore, JobStore } from '../core/ports';
import type { FlowRecord } from '../core/ports/flows';
import { HistoryQueries } from '../history';
import { UUID_RE } from '../history/common';
import { JobsService } from '../jobs/jobs.service';
import { FlowStatus, flowStatus, statusCounts } from './flow-status';

/** GET /flows/:id (API.md v1.2 "Workflows"). */
export interface FlowView {
  flowId: string;
  status: FlowStatus;
  counts: Record<JobStatus, number>;
  jobs: { ref: string | null; id: string; status: JobStatus | null; dependsOn: string[] }[];
}

/** One item of GET /jobs/:id/dependencies. */
export interface DependencyView {
  ref: string;
  id: string;
  status: JobStatus | null;
  result: Json | null;
  lastError: string | null;
}

/**
 * Reading and cancelling flows, and a job's dependencies, in the caller's
 * project only (another project's flow or job → 404). A flow is read from its
 * record in Redis; each job's status through the lookup GET /jobs/:id uses
 * (its hash in Redis, else the PostgreSQL history for a job Redis pruned).
 */
@Injectable()
export class FlowViewService {
  constructor(
    private readonly flows: FlowRecordStore,
    private readonly store: JobStore,
    private readonly history: HistoryQueries,
    private readonly jobs: JobsService,
  ) {}

  /**
   * The flow from its record in Redis, else (Redis lost it: a restore, or
   * data lost at run time) from the history's rows of the flow.
   * @throws FlowNotFoundError (404): unknown id, not a UUID, or another project's flow.
   */
  async get(flowId: string, project: string): Promise<FlowView> {
    const rec = await this.record(flowId, project).catch((e: Error) => {
      if (e instanceof FlowNotFoundError && UUID_RE.test(flowId)) return null;
      throw e;
    });
    if (rec) return this.render(rec);
    const rows = await this.history.flowJobs(flowId.toLowerCase(), project);
    if (!rows.length) throw new FlowNotFoundError(flowId);
    const statuses = rows.map((r) => r.status as JobStatus);
    return { flowId: flowId.toLowerCase(), status: flowStatus(statuses), counts: statusCounts(statuses), jobs: rows.map((r, i) => ({ ref: r.ref, id: r.id, status: statuses[i], dependsOn: r.dependsOn })) };
  }

  /**
   * Cancels every job of the flow that has not finished: the blocked ones
   * first (so none is released by a dependency cancelled meanwhile), then the
   * waiting, delayed and active ones (an active job gets a cancel request: its
   * AbortSignal fires, it ends cancelled). A job that ended meanwhile is left.
   * A flow whose record Redis no longer holds is read (and its unfinished
   * jobs found) as GET reads it, from the history.
   * @returns the flow as it is after the cancellations.
   * @throws FlowNotFoundError (404).
   */
  async cancel(flowId: string, project: string): Promise<FlowView> {
    const rec = await this.record(flowId, project).catch((e: Error) => {
      if (e instanceof FlowNotFoundError && UUID_RE.test(flowId)) return null;
      throw e;
    });
    // No record (expired 7 days after the flow's end, or lost with Redis): the flow as GET reads it from the history.
    const before = rec ? await this.render(rec) : await this.get(flowId, project);
    const open = before.jobs.filter((j) => j.status !== null && !isTerminal(j.status));
    const queueOf = new Map(rec ? rec.jobs.map((j) => [j.id, j.queue]) : []);
    const cancel = async (id: string) => this.store.cancel(queueOf.get(id) ?? (await this.jobs.get(id, project)).queue, id);
    for (const batch of [open.filter((j) => j.status === 'blocked'), open.filter((j) => j.status !== 'blocked')]) {
      await Promise.all(
        batch.map((j) =>
          cancel(j.id).catch((e: Error) => {
            if (!(e instanceof WrongStateError) && !(e instanceof JobNotFoundError)) throw e;
          }),
        ),
      );
    }
    return rec ? this.render(rec) : this.get(flowId, project);
  }

  /**
   * A job's dependencies with their status, result and last error: from its
   * hash's `dp` in the order it named them, or, once Redis has pruned the
   * job, from the history (`job_dependencies`, by ref); [] for a job outside
   * a flow.
   * @throws JobNotFoundError (404), also for another project's job.
   */
  async dependencies(id: string, project: string): Promise<DependencyView[]> {
    const job = await this.jobs.get(id, project);
    const placement = await this.flows.placement(job.queue, job.id);
    const deps: { ref: string; id: string; queue: string | null }[] = placement
      ? placement.dependsOn
      : ((await this.history.dependenciesOf(job.id, project)) ?? []).map((d) => ({ ref: d.ref, id: d.id, queue: null }));
    return Promise.all(
      deps.map(async (d) => {
        const dep = (d.queue ? await this.store.getJob(d.queue, d.id) : null) ?? (await this.history.getJob(d.id));
        return { ref: d.ref, id: d.id, status: dep?.status ?? null, result: dep?.result ?? null, lastError: dep?.lastError ?? null };
      }),
    );
  }

  private async record(flowId: string, project: string): Promise<FlowRecord> {
    // Checked before the id reaches a key name: `{flow:<id>}` is a hash tag.
    const rec = UUID_RE.test(flowId) ? await this.flows.read(flowId.toLowerCase()) : null;
    if (!rec || rec.project !== project) throw new FlowNotFoundError(flowId);
    return rec;
  }

  private async render(rec: FlowRecord): Promise<FlowView> {
    const statuses = await Promise.all(rec.jobs.map((j) => this.status(j.queue, j.id)));
    return {
      flowId: rec.flowId,
      status: flowStatus(statuses),
      counts: statusCounts(statuses),
      jobs: rec.jobs.map((j, i) => ({ ref: j.ref, id: j.id, status: statuses[i], dependsOn: j.dependsOn })),
    };
  }

  /** Redis first (one HMGET, no payload), then the history for a job Redis pruned; null when neither has it. */
  private async status(queue: string, id: string): Promise<JobStatus | null> {
    const brief = await this.store.jobBrief(queue, id);
    if (brief) return brief.status as JobStatus;
    return (await this.history.getJob(id))?.status ?? null;
  }
}
