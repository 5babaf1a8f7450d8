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
