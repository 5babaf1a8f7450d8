import type { NormalizedFlowJob } from '../flow-graph';
import type { Subscription } from './subscription';

/**
 * Workflows (API.md v1.2, docs/workflows.md): the per-flow record that
 * decides when a job's dependencies are satisfied. Queue-side moves (blocked
 * → waiting, the cancellations down the graph) are the caller's, one queue at
 * a time, from what {@link FlowRecordStore.advance} answers.
 */

/** A job of a flow as its record keeps it: where it lives and what it waits for. */
export interface FlowRecordJob {
  id: string;
  /** Its queue (project-qualified, as the stores name queues). */
  queue: string;
  /** 'cancel': a failed or cancelled dependency cancels it; 'run': it runs once every dependency has ended. */
  onDependencyFailure: 'cancel' | 'run';
  /** Job ids of this flow it waits for. */
  dependsOn: string[];
  /** Its ref in the POST /flows request, kept with the record for GET /flows/:id (absent: read from the job's hash). */
  ref?: string;
}

/** A flow's record as {@link FlowRecordStore.read} answers it. */
export interface FlowRecord {
  flowId: string;
  /** The project that submitted it. */
  project: string;
  /** Epoch ms (Redis clock). */
  createdAt: number;
  /** Its jobs, by id (UUIDv7 made in request order: request order). */
  jobs: (Omit<FlowRecordJob, 'ref'> & { ref: string | null })[];
}

/** A job's place in its flow, from its own hash (fields fl, rf, dp: lua/enqueueJobs-5.lua). */
export interface JobPlacement {
  flowId: string;
  ref: string;
  /** Its dependencies as sent to the enqueue: ref, job id, queue (project-qualified). */
  dependsOn: { ref: string; id: string; queue: string }[];
  /** Its onDependencyFailure (field fp). */
  policy: 'cancel' | 'run';
}

/** What a job's outcome set in motion: the jobs to unblock, to cancel, to block again. Each {queue, id}. */
export interface FlowAdvance {
  release: { queue: string; id: string }[];
  cancel: { queue: string; id: string }[];
  reblock: { queue: string; id: string }[];
}

/** A job's outcome as the flow sees it: completed, ended otherwise (failed, cancelled), or retried from the DLQ. */
export type FlowOutcome = 'completed' | 'ended' | 'retried';

/** One entry of a queue's flow outbox: a flow job's outcome, written in the step that ended it. */
export interface FlowOutboxEntry {
  flowId: string;
  jobId: string;
  outcome: FlowOutcome;
  /**
   * When the outcome was written (Redis time, µs, as a decimal string): lets
   * the record ignore an entry handed out again after a later outcome of the
   * same job was applied. Absent in entries of earlier versions.
   */
  at?: string;
  /** The entry as stored, to acknowledge it. */
  raw: string;
}

/**
 * What {@link FlowRecordStore.claimKey} found: the key taken for this flow
 * now, or held by a flow (`flowId`) submitted with the same body or another.
 */
export type FlowKeyClaim = { claimed: true } | { claimed: false; flowId: string; sameBody: boolean };

export abstract class FlowRecordStore {
  /**
   * Takes a `POST /flows` idempotency key of `project` for `flowId`, before
   * anything of the flow is written (the mechanism and lifetime of the job
   * idempotency keys: lua/includes/idem.lua, `ttlMs` = IDEMPOTENCY_TTL_MS).
   * "The same body" is the same validated jobs in the same order: refs,
   * queues, dependencies, policies and each job's fields as an enqueue hashes
   * them. Of concurrent claims of one key exactly one gets it.
   */
  abstract claimKey(project: string, key: string, flowId: string, jobs: NormalizedFlowJob[], ttlMs: number): Promise<FlowKeyClaim>;
  /** Frees a key {@link claimKey} took for `flowId` (its flow is known not to exist); @returns false when it was free or held for another flow. */
  abstract releaseKey(project: string, key: string, flowId: string): Promise<boolean>;
  /**
   * Writes the record of a new flow (1..20,000 jobs, RangeError beyond: a 10,000-child fan-in fits; POST /flows sends at most 1,000; the graph already
   * validated: src/core/flow-graph.ts). @returns false when a flow with this
   * id exists (nothing written).
   */
  abstract record(flowId: string, project: string, jobs: FlowRecordJob[]): Promise<boolean>;
  /**
   * Applies one job's outcome once (a repeat changes nothing and answers the
   * same): O(dependents of the job). Unknown flow or job: empty lists. `at`
   * (the outbox entry's time, µs): an outcome older than the last applied
   * for the job is ignored (empty lists).
   */
  abstract advance(flowId: string, jobId: string, outcome: FlowOutcome, at?: string): Promise<FlowAdvance>;
  /**
   * Applies outcomes of one flow's jobs in order, each once, in one step (the
   * flow worker's batch of one flow's outbox entries): answers the union of
   * what each decided right after it was applied, each job at most once per
   * list. 1..1,000 outcomes (RangeError otherwise).
   */
  abstract advanceMany(flowId: string, outcomes: { jobId: string; outcome: FlowOutcome; at?: string }[]): Promise<FlowAdvance>;
  /**
   * Moves jobs of one queue as {@link advance} decided: 'unblock' (blocked →
   * waiting, or delayed until its runAt), 'cancel' (blocked → cancelled,
   * reason dependency_failed; its outcome goes to the queue's flow outbox),
   * 'reblock' (cancelled for a dependency → blocked). A job not in the
   * expected state is left alone. @returns the ids moved.
   * @throws UnavailableError when the queue is fenced until the restore watch
   *   checked it after a Redis restart (nothing moved: try again once checked).
   */
  abstract move(queue: string, op: 'unblock' | 'cancel' | 'reblock', ids: string[]): Promise<string[]>;
  /**
   * 'reblock' of {@link move}, with the queue's time when it ran (µs, as
   * outbox entries carry it): the caller applies each moved job's 'retried'
   * at that time, so its cancellation still in the queue's outbox (the
   * cascade the DLQ retry raced with) reads as older and is ignored. On a
   * fenced queue nothing moves and the answer is `{moved: [], at: ''}`
   * (no throw: the dependents stay cancelled, which ends them).
   */
  abstract reblock(queue: string, ids: string[]): Promise<{ moved: string[]; at: string }>;
  /**
   * The record of a flow: its project, its jobs with their queues,
   * dependencies and refs. O(jobs). @returns null for an unknown flow.
   */
  abstract read(flowId: string): Promise<FlowRecord | null>;
  /** Whether Redis holds the flow's record (one EXISTS on its meta hash). */
  abstract exists(flowId: string): Promise<boolean>;
  /**
   * Deletes a flow's record (a submission rolled back: its jobs were
   * cancelled, or never created). Outcomes of its jobs still in an outbox
   * then advance nothing (an unknown flow).
   */
  abstract discard(flowId: string): Promise<void>;
  /** The flow fields of a job's hash in `queue`; null when the job is not live in Redis or not of a flow. */
  abstract placement(queue: string, id: string): Promise<JobPlacement | null>;
  /** Marks `queue` as holding flow jobs: the flow worker reads its outbox from now on. */
  abstract watch(queue: string): Promise<void>;
  /**
   * Calls `onWake(queue)` whenever an outcome lands in `queue`'s empty flow
   * outbox (Redis pub/sub, on a connection of its own; a notice lost while
   * reconnecting is left to the flow worker's periodic pass).
   */
  abstract listen(onWake: (queue: string) => void): Promise<Subscription>;
  /** The queues marked by {@link watch}. */
  abstract watched(): Promise<string[]>;
  /**
   * Takes up to `max` (1..1000) outbox entries of `queue`, oldest first, each
   * in flight for `leaseMs` (1,000..600,000): not acknowledged by then, it is
   * handed out again (its taker died). Malformed entries are dropped.
   * `acked`: entries of the caller's previous batch, acknowledged in the same
   * step (as {@link ack}); `max` 0 only acknowledges.
   */
  abstract take(queue: string, max: number, leaseMs: number, acked?: string[]): Promise<FlowOutboxEntry[]>;
  /** Acknowledges entries taken from `queue`'s outbox (they are done). */
  abstract ack(queue: string, raws: string[]): Promise<void>;
}
