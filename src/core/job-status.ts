/**
 * Job states and the one table of allowed transitions.
 *
 * Every Lua script re-checks the current state inside Redis before writing;
 * this table is the TypeScript mirror used by tests, the API and the audit
 * projection. Keep the two in sync (a unit test compares them).
 */

/**
 * The status of a job, as the API reports it.
 *
 * - `waiting`: ready to run (also while its queue is paused). Moved in by
 *   enqueue, promotion of a due delayed job, release on graceful shutdown,
 *   the reaper after a lease expired, a DLQ retry, and a debounce update
 *   whose maxWaitMs is reached. Moved out by claim, cancel, or a debounce
 *   update of a never-claimed job (back to `delayed`). A crash changes
 *   nothing: the job stays in the `waiting` set.
 * - `delayed`: `runAt` is in the future (first run, a debounce window, or a
 *   retry's backoff). Moved out by promotion (claim scripts and the
 *   promoter), cancel, or a debounce update that makes it due. Safe across
 *   restarts: the wake-up time lives in the `delayed` sorted set.
 * - `active`: held by one worker under a lease (lock token + expiry). Moved
 *   out only by the holder (complete / fail / release, fenced by the token)
 *   or by the reaper once the lease expired. If the worker crashes, the
 *   lease expires and the reaper moves the job on with a `stalled` event.
 * - `completed`: the handler succeeded. Terminal.
 * - `failed`: attempts exhausted or unrecoverable: the job is in the
 *   dead-letter queue. Terminal until an explicit DLQ retry.
 * - `cancelled`: cancelled by a client, or (a job of a flow) because a
 *   dependency failed. Terminal (a DLQ retry may revive it; a DLQ retry of
 *   the dependency that cancelled a flow job puts it back to `blocked`).
 * - `blocked` (API.md v1.2 "Workflows"): a job of a flow whose dependencies
 *   have not all completed (with `onDependencyFailure: "run"`, not all
 *   ended). Moved in by the flow's creation (POST /flows) and, from
 *   `cancelled`, by a DLQ retry of the dependency whose failure cancelled
 *   it (reason `dependency_retried`). Moved out by the flow worker: to
 *   `waiting` (or `delayed` until its own runAt) once its dependencies
 *   allow it, or to `cancelled` (reason `dependency_failed`) when one
 *   failed under the `cancel` policy; or by a client's cancel (DELETE
 *   /jobs/:id, DELETE /flows/:id). Not claimable, not counted as waiting:
 *   it lives in the queue's `blocked` sorted set, not the waiting set. Not
 *   terminal. A crash changes nothing: the release is driven by the flow
 *   outbox, and a repeat acts only on a job still `blocked`
 *   (docs/workflows.md).
 */
export type JobStatus = 'waiting' | 'delayed' | 'active' | 'completed' | 'failed' | 'cancelled' | 'blocked';

export const JOB_STATUSES: readonly JobStatus[] = [
  'waiting',
  'delayed',
  'active',
  'completed',
  'failed',
  'cancelled',
  'blocked',
];

export const TERMINAL_STATUSES: ReadonlySet<JobStatus> = new Set(['completed', 'failed', 'cancelled']);

/** Audit event names, as written to the events stream and served by the API. */
export type JobEventName =
  | 'enqueued'
  | 'promoted'
  | 'claimed'
  | 'heartbeat_lost'
  | 'progress'
  | 'completed'
  | 'retry_scheduled'
  | 'failed'
  | 'stalled'
  | 'released'
  | 'cancelled'
  | 'cancel_requested'
  | 'retried_from_dlq'
  // API.md v1.2: an enqueue with a debounce key updated this job (new
  // payload, options and runAt) instead of creating one; waiting or delayed
  // to waiting or delayed.
  | 'debounced'
  // Addition to API.md: DELETE /jobs/dlq removed the failed job from the DLQ
  // (and from Redis); not a state change, the history keeps it 'failed'.
  | 'purged'
  // API.md v1.2 "Workflows": a flow job's dependencies allow it to run;
  // blocked to waiting, or delayed until its own runAt.
  | 'unblocked'
  // Addition to API.md (workflows): a DLQ retry of the dependency whose
  // failure cancelled this flow job brings it back; cancelled to blocked.
  | 'blocked';

/**
 * Allowed transitions: `from -> to` with the event that records it.
 * `null` as `from` means the job did not exist before (enqueue).
 */
export interface Transition {
  from: JobStatus | null;
  to: JobStatus;
  event: JobEventName;
}

export const TRANSITIONS: readonly Transition[] = [
  { from: null, to: 'waiting', event: 'enqueued' },
  { from: null, to: 'delayed', event: 'enqueued' },
  // A job of a flow (POST /flows) with dependencies: it waits for them.
  { from: null, to: 'blocked', event: 'enqueued' },
  { from: 'delayed', to: 'waiting', event: 'promoted' },
  { from: 'waiting', to: 'active', event: 'claimed' },
  { from: 'active', to: 'completed', event: 'completed' },
  { from: 'active', to: 'delayed', event: 'retry_scheduled' },
  { from: 'active', to: 'waiting', event: 'retry_scheduled' },
  { from: 'active', to: 'failed', event: 'failed' },
  { from: 'active', to: 'waiting', event: 'stalled' },
  // The lease expired on the last attempt: a `stalled` event (the job stays
  // active for that instant), then `failed` into the DLQ, in one script call.
  { from: 'active', to: 'active', event: 'stalled' },
  { from: 'active', to: 'waiting', event: 'released' },
  // An external worker's release with delayMs (POST /jobs/:id/release).
  { from: 'active', to: 'delayed', event: 'released' },
  { from: 'active', to: 'cancelled', event: 'cancelled' },
  { from: 'active', to: 'active', event: 'cancel_requested' },
  { from: 'waiting', to: 'cancelled', event: 'cancelled' },
  { from: 'delayed', to: 'cancelled', event: 'cancelled' },
  // A job hash that cannot be decoded is dead-lettered where it is found
  // (claim pops it from waiting, promotion from delayed): reason decode_error.
  { from: 'waiting', to: 'failed', event: 'failed' },
  { from: 'delayed', to: 'failed', event: 'failed' },
  { from: 'failed', to: 'waiting', event: 'retried_from_dlq' },
  { from: 'cancelled', to: 'waiting', event: 'retried_from_dlq' },
  // Debounce (API.md v1.2): a never-claimed job gets a new runAt, now +
  // windowMs (delayed) or, once its maxWaitMs is reached, now (waiting).
  { from: 'waiting', to: 'waiting', event: 'debounced' },
  { from: 'waiting', to: 'delayed', event: 'debounced' },
  { from: 'delayed', to: 'delayed', event: 'debounced' },
  { from: 'delayed', to: 'waiting', event: 'debounced' },
  // Workflows (API.md v1.2, docs/workflows.md): every dependency completed
  // (or, with onDependencyFailure "run", ended); delayed when the job's own
  // runAt is later.
  { from: 'blocked', to: 'waiting', event: 'unblocked' },
  { from: 'blocked', to: 'delayed', event: 'unblocked' },
  // A dependency failed under the `cancel` policy (reason
  // dependency_failed, on down the graph), or a client's cancel (DELETE
  // /jobs/:id, DELETE /flows/:id).
  { from: 'blocked', to: 'cancelled', event: 'cancelled' },
  // A DLQ retry of the dependency whose failure cancelled the job brings it
  // back (reason dependency_retried); released again later as usual.
  { from: 'cancelled', to: 'blocked', event: 'blocked' },
];

/** True when `from -> to` appears in {@link TRANSITIONS}. */
export function canTransition(from: JobStatus | null, to: JobStatus): boolean {
  return TRANSITIONS.some((t) => t.from === from && t.to === to);
}

/** True for `completed`, `failed` and `cancelled`. */
export function isTerminal(status: JobStatus): boolean {
  return TERMINAL_STATUSES.has(status);
}
