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
 * - `cancelled`: cancelled by a client. Terminal (a DLQ retry may revive it).
 */
export type JobStatus = 'waiting' | 'delayed' | 'active' | 'completed' | 'failed' | 'cancelled';

export const JOB_STATUSES: readonly JobStatus[] = [
  'waiting',
  'delayed',
  'active',
  'completed',
  'failed',
  'cancelled',
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
  | 'purged';

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
];

/** True when `from -> to` appears in {@link TRANSITIONS}. */
export function canTransition(from: JobStatus | null, to: JobStatus): boolean {
  return TRANSITIONS.some((t) => t.from === from && t.to === to);
}

/** True for `completed`, `failed` and `cancelled`. */
export function isTerminal(status: JobStatus): boolean {
  return TERMINAL_STATUSES.has(status);
}
