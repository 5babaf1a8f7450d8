/**
 * Blocking wake-ups for idle in-process workers: resolves as soon as any of
 * the queues gets work (enqueue, retry, resume, promotion push a token), or
 * after `timeoutMs`. Implemented by `src/redis/wake/wake-waiter.ts`.
 */
export abstract class WakeWaiter {
  /** @returns true when woken by a token, false on timeout or close. */
  abstract wait(queues: string[], timeoutMs: number): Promise<boolean>;
  abstract close(): void;
}

/**
 * Wake-ups for the long polls of the external claim endpoint: one waiter per
 * request, oldest first. Implemented by `src/redis/wake/wake-hub.ts`.
 */
export abstract class WakeHub {
  abstract readonly isClosed: boolean;
  /** @returns true when woken by a token; false on timeout, abort or close. */
  abstract wait(queue: string, timeoutMs: number, signal: AbortSignal): Promise<boolean>;
  /** Requests of this process waiting on `queue` now. */
  abstract waiting(queue: string): number;
  abstract close(): void;
}

/**
 * Where the wake-ups and cancel requests of this process come from; each
 * waiter or subscription gets connections of its own (blocking commands).
 * Implemented by `src/redis/wake/wake-signals.ts`.
 */
export abstract class WakeSignals {
  /** A waiter for one worker runtime; `name` labels its connections (e.g. `sluice-wake-<workerId>`). */
  abstract waiter(name: string): WakeWaiter;
  /** The process's hub for external long polls (made on first use; closed by its owner). */
  abstract hub(): WakeHub;
  /**
   * Calls `fn` with the job id of each cancel request for an active job from
   * now on (its holder aborts the handler); `name` labels the connection.
   * @returns the unsubscribe function.
   * @throws when the subscription cannot be made.
   */
  abstract subscribeCancels(name: string, fn: (jobId: string) => void): Promise<() => void>;
}
