/**
 * Workflows after a Redis loss (docs/workflows.md "PostgreSQL, restore, Redis
 * loss"): the hot store's side of rebuilding a flow's record from the history
 * (src/restore/flow-restore.ts drives it). Implemented by
 * `src/redis/stores/flow-restore.ts` (lua/restoreFlow-1.lua).
 */

/** One job of a flow as PostgreSQL holds it, for {@link FlowRestoreStore.rebuild}. */
export interface FlowRestoreJob {
  id: string;
  /** Its queue (project-qualified). */
  queue: string;
  onDependencyFailure: 'cancel' | 'run';
  /** Job ids of this flow it waits for (at most 1,000). */
  dependsOn: string[];
  /** Its ref in the flow, null when the history has none. */
  ref: string | null;
  /** Its outcome as the record counts it: completed, ended otherwise (failed, cancelled, dead-lettered), or none yet. */
  outcome: 'completed' | 'ended' | null;
  /**
   * PostgreSQL's outcome of this job stands: its queue is being restored,
   * or Redis no longer holds the job (finished and mirrored, or lost with
   * its queue), or holds it ended the same way. Its outcome is then applied
   * to an existing record too (its outbox entry may have gone with a lost
   * or rewound record). Outcomes of other jobs (Redis holds them in another
   * state: a DLQ retry not mirrored yet) are applied only to a record
   * written now.
   */
  authoritative: boolean;
}

/** What one rebuild did and what the queues must now do. Each {queue, id}. */
export interface FlowRestoreResult {
  /** The record was missing and was written from PostgreSQL. */
  created: boolean;
  /** Outcomes newly applied to the record. */
  applied: number;
  /** Jobs of the record with no outcome and nothing left to wait for (none, for a job without dependencies): to unblock (a no-op on a job not blocked). */
  release: { queue: string; id: string }[];
  /** 'cancel' jobs with no outcome and a dependency ended otherwise: to cancel, reason dependency_failed (a no-op on a job not blocked). */
  cancel: { queue: string; id: string }[];
}

/** Most jobs one flow's record holds (lua/recordFlow-1.lua). */
export const FLOW_RESTORE_MAX_JOBS = 10_000;

export abstract class FlowRestoreStore {
  /**
   * Writes the flow's record from `jobs` when it is missing, then applies
   * each outcome not yet in it (only `authoritative` ones when the record
   * existed): one atomic step in the flow's slot, idempotent (an outcome
   * applied once is never counted again).
   * @param jobs every job of the flow, 1..{@link FLOW_RESTORE_MAX_JOBS}.
   * @param createdAt epoch ms, the record's creation time when written.
   * @throws RangeError when `jobs` is empty or over the bound.
   */
  abstract rebuild(flowId: string, project: string, createdAt: number, jobs: FlowRestoreJob[]): Promise<FlowRestoreResult>;
  /**
   * What the flow's record says its queues must do now (lua/flowMoves-1.lua,
   * read-only): the same lists {@link rebuild} answers, read again once a
   * restored queue's jobs are back in Redis.
   * @returns empty lists when the record is missing.
   */
  abstract moves(flowId: string): Promise<Pick<FlowRestoreResult, 'release' | 'cancel'>>;
  /**
   * Each job's status in Redis (field `s` of its hash, in its queue's slot:
   * one command per job, pipelined; any cluster slot).
   * @param jobs at most 10,000.
   * @returns one status per job, in order; null when Redis does not hold the job.
   */
  abstract statuses(jobs: { queue: string; id: string }[]): Promise<(string | null)[]>;
  /**
   * Each job's flow fields in Redis (fields s, fp, dp of its hash; pipelined
   * like {@link statuses}): for a dependency PostgreSQL does not know yet
   * (its queue kept by Redis, its `enqueued` not mirrored), so a record
   * written anew waits for it as its dependents do.
   * @param jobs at most 10,000.
   * @returns one per job, in order; null when Redis does not hold the job. `dependsOn`: job ids
   *   from `dp` (empty when it has none or it cannot be read).
   */
  abstract peek(jobs: { queue: string; id: string }[]): Promise<({ status: string; onDependencyFailure: 'cancel' | 'run'; dependsOn: string[] } | null)[]>;
}
