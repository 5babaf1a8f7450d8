import { randomUUID } from 'node:crypto';
import { normalizeEnqueue, type NormalizedEnqueue } from '../../src/core/job-options';
import type { Json } from '../../src/core/job';
import type { FlowRecordJob } from '../../src/core/ports/flows';
import type { TestStore } from './redis';

/** One job of a flow as tests write it: its ref, queue, dependencies (refs) and policy. */
export interface FlowSpec {
  ref: string;
  queue: string;
  deps?: string[];
  run?: boolean;
  type?: string;
  payload?: Record<string, Json>;
}

/**
 * Submits a flow through the stores as POST /flows does (docs/workflows.md):
 * the record, every queue watched, the jobs created blocked, then the roots
 * unblocked. Returns the flow id and each ref's job id. `flowId` may be given
 * (a test that places the flow's record on a chosen Redis Cluster shard).
 */
export async function submitFlow(t: TestStore, specs: FlowSpec[], flowId: string = randomUUID()): Promise<{ flowId: string; id: Record<string, string> }> {
  const id = Object.fromEntries(specs.map((s) => [s.ref, randomUUID()]));
  const queueOf = Object.fromEntries(specs.map((s) => [s.ref, s.queue]));
  const jobs: FlowRecordJob[] = specs.map((s) => ({ id: id[s.ref], queue: s.queue, onDependencyFailure: s.run ? 'run' : 'cancel', dependsOn: (s.deps ?? []).map((r) => id[r]) }));
  if (!(await t.stores.flows.record(flowId, 'default', jobs))) throw new Error(`flow ${flowId} exists`);
  for (const q of new Set(specs.map((s) => s.queue))) {
    await t.stores.flows.watch(q);
    const mine = specs.filter((s) => s.queue === q);
    for (let i = 0; i < mine.length; i += 1000) {
      await t.store.enqueue(
        mine.slice(i, i + 1000).map((s): NormalizedEnqueue => ({
          ...normalizeEnqueue({ queue: q, type: s.type ?? 't', payload: s.payload ?? { ref: s.ref } }, 1e6),
          flow: { flowId, jobId: id[s.ref], ref: s.ref, onDependencyFailure: s.run ? 'run' : 'cancel', dependsOn: (s.deps ?? []).map((r) => ({ ref: r, id: id[r], queue: queueOf[r] })) },
        })),
      );
    }
  }
  const roots = specs.filter((x) => !x.deps?.length);
  for (const q of new Set(roots.map((s) => s.queue))) await t.stores.flows.move(q, 'unblock', roots.filter((s) => s.queue === q).map((s) => id[s.ref]));
  return { flowId, id };
}
