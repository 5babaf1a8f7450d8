/**
 * The hot-path store's connection as the rest of the system sees it: whether
 * it is up, a probe, and the store's clock. Implemented by
 * `src/redis/stores/connection-state.ts`.
 */
export abstract class StoreConnection {
  /** True while commands can be sent (connected and ready). */
  abstract isReady(): boolean;
  /** A short word for logs and 503 bodies: `ready`, `connecting`, `reconnecting`, `end`, … */
  abstract state(): string;
  /**
   * One round trip, bounded by `timeoutMs`.
   * @throws Error naming the state or the timeout.
   */
  abstract ping(timeoutMs: number): Promise<void>;
  /** The store's clock, epoch ms (Redis TIME: every host agrees on it). */
  abstract serverTime(): Promise<number>;
  /** Calls `fn` each time the connection closes; returns the unsubscribe function. */
  abstract onClose(fn: () => void): () => void;
  /** Calls `fn` each time the connection becomes ready (connected, or reconnected after a close); returns the unsubscribe function. */
  abstract onReady(fn: () => void): () => void;
}
