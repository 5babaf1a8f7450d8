import { UnavailableError } from '../core/errors';
import type { FlowPlacement, NormalizedEnqueue } from '../core/job-options';
import type { FlowRecordStore } from '../core/ports/flows';
import type { EnqueueResult, JobStore } from '../core/ports/jobs';
import type { JobTrace } from '../core/trace-context';

/** The flow id is another flow's (a record exists): nothing was written. */
export class FlowIdTakenError extends UnavailableError {
  constructor(readonly flowId: string) {
    super(`flow id ${flowId} exists already: nothing was created, submit again`);
  }
}

/** A job of a flow ready for the stores: normalized, with its placement (ids chosen by the caller). */
export type PlacedFlowJob = NormalizedEnqueue & { flow: FlowPlacement };

/** Groups items by queue, in order of first appearance. */
export function byQueue<T extends { queue: string }>(items: T[]): Map<string, T[]> {
  const m = new Map<string, T[]>();
  for (const it of items) m.set(it.queue, [...(m.get(it.queue) ?? []), it]);
  return m;
}

/** Jobs per enqueue step (the enqueue script's bound). */
const ENQUEUE_CHUNK = 1000;

/**
 * Writes a validated flow (src/core/flow-graph.ts) through the stores
 * (docs/workflows.md): the record with the refs (one step in the flow's
 * slot), every queue watched (before any job exists, so every outcome is read
 * from its outbox), each queue's jobs created `blocked` (one enqueue per
 * queue and 1,000 jobs), then the roots unblocked (one move per queue and
 * 1,000 jobs). The
 * one path for POST /flows (src/flows/flows.service.ts, which rolls back on a
 * throw), the tests (test/support/flows.ts) and the benchmark
 * (scripts/bench/flows.js). Framework-free.
 * @param jobs every job of the flow, all with the same `flow.flowId`; 1..20,000.
 * @param created filled with the id of each job as its enqueue is confirmed
 *   (also when a later step throws: the caller's rollback tells a job Redis
 *   lost from one never created).
 * @returns each job's enqueue result, by job id.
 * @throws FlowIdTakenError when the flow id exists already (nothing written);
 *   UnavailableError when an enqueue answers another job, a root was not
 *   released, or the record is gone once the roots are released (Redis
 *   restarted midway: checked last, so a flow answered is one whose record
 *   outlived its jobs' creation); whatever a store throws. After the record, a throw
 *   leaves what was written: the caller rolls back.
 */
export async function submitFlow(
  stores: { jobs: JobStore; flows: FlowRecordStore },
  flowId: string,
  project: string,
  jobs: PlacedFlowJob[],
  trace?: JobTrace | null,
  created?: Set<string>,
): Promise<Map<string, EnqueueResult>> {
  const recorded = await stores.flows.record(
    flowId,
    project,
    jobs.map((j) => ({ id: j.flow.jobId, queue: j.queue, onDependencyFailure: j.flow.onDependencyFailure, dependsOn: j.flow.dependsOn.map((d) => d.id), ref: j.flow.ref })),
  );
  if (!recorded) throw new FlowIdTakenError(flowId);
  const groups = byQueue(jobs);
  await Promise.all([...groups.keys()].map((q) => stores.flows.watch(q)));
  const results = new Map<string, EnqueueResult>();
  for (const group of groups.values()) {
    for (let i = 0; i < group.length; i += ENQUEUE_CHUNK) {
      const chunk = group.slice(i, i + ENQUEUE_CHUNK);
      const answered = await stores.jobs.enqueue(chunk, trace);
      answered.forEach((r, k) => {
        if (r.id !== chunk[k].flow.jobId || !r.created) throw new UnavailableError(`flow ${flowId}: the enqueue of ${chunk[k].flow.ref} answered another job`);
        results.set(r.id, r);
        created?.add(r.id);
      });
    }
  }
  const roots = byQueue(jobs.filter((j) => j.flow.dependsOn.length === 0));
  await Promise.all(
    [...roots].map(async ([q, rs]) => {
      const moved = new Set<string>();
      for (let i = 0; i < rs.length; i += ENQUEUE_CHUNK) {
        for (const id of await stores.flows.move(q, 'unblock', rs.slice(i, i + ENQUEUE_CHUNK).map((r) => r.flow.jobId))) moved.add(id);
      }
      const stuck = rs.filter((r) => !moved.has(r.flow.jobId));
      if (stuck.length) throw new UnavailableError(`flow ${flowId}: queue ${q} did not release ${stuck.map((r) => r.flow.ref).join(', ')} (Redis restarted?)`);
    }),
  );
  // Redis lost the record while the jobs were being created (a FLUSHALL, a restart without persistence
  // between two steps): the jobs made after it live without it, and their outcomes would advance nothing
  // (an unknown flow) — dependents blocked for good. Refused like a root not released.
  if (!(await stores.flows.exists(flowId))) throw new UnavailableError(`flow ${flowId}: Redis lost its record while it was submitted (Redis restarted?)`);
  return results;
}
