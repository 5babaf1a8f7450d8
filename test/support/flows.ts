import { randomUUID } from 'node:crypto';
import { v7 as uuidv7 } from 'uuid';
import { normalizeEnqueue } from '../../src/core/job-options';
import type { Json } from '../../src/core/job';
import { type PlacedFlowJob, submitFlow as submit } from '../../src/flows/submit-flow';
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
 * Submits a flow through the stores as POST /flows does
 * (src/flows/submit-flow.ts: the record, every queue watched, the jobs
 * created blocked, then the roots unblocked). Returns the flow id and each
 * ref's job id. `flowId` may be given (a test that places the flow's record
 * on a chosen Redis Cluster shard).
 */
export async function submitFlow(t: TestStore, specs: FlowSpec[], flowId: string = randomUUID()): Promise<{ flowId: string; id: Record<string, string> }> {
  // UUIDv7s, as the server makes them (the restore tells a lost job from one retention pruned by its id's time).
  const id = Object.fromEntries(specs.map((s) => [s.ref, uuidv7()]));
  const queueOf = Object.fromEntries(specs.map((s) => [s.ref, s.queue]));
  const jobs = specs.map(
    (s): PlacedFlowJob => ({
      ...normalizeEnqueue({ queue: s.queue, type: s.type ?? 't', payload: s.payload ?? { ref: s.ref } }, 1e6),
      flow: { flowId, jobId: id[s.ref], ref: s.ref, onDependencyFailure: s.run ? 'run' : 'cancel', dependsOn: (s.deps ?? []).map((r) => ({ ref: r, id: id[r], queue: queueOf[r] })) },
    }),
  );
  await submit({ jobs: t.store, flows: t.stores.flows }, flowId, 'default', jobs);
  return { flowId, id };
}

/**
 * Claims everything ready in `q` (up to 100) and completes it with result
 * `{done: id}`, or fails it for good when its id is in `fail`.
 * @returns the ids run, sorted.
 */
export async function runReady(t: TestStore, q: string, fail: Set<string> = new Set()): Promise<string[]> {
  const c = await t.store.claim(q, 100, 30_000, 'w');
  for (const j of c.jobs) {
    if (fail.has(j.id)) await t.store.fail(q, j.id, j.lockToken, { error: 'boom', retryable: false, delayMs: 0, reason: 'error', workerId: 'w' });
    else await t.store.complete(q, 'w', [{ id: j.id, lockToken: j.lockToken, result: { done: j.id } }]);
  }
  return c.jobs.map((j) => j.id).sort();
}
