import type { Subscription } from './subscription';

/**
 * Live job-change notices for the console (src/dashboard/live/live-hub.ts):
 * the mirror's writers publish what each committed batch changed while some
 * API process says it has listeners. Fire and forget. Times in ms.
 * Implemented by `src/redis/stores/live-events.ts` (pub/sub and a presence key).
 */
export abstract class LiveEvents {
  /**
   * Calls `onMessage` with each published message (JSON text), on a connection
   * of its own, until closed. Errors are swallowed: the connection reconnects by itself.
   */
  abstract subscribe(onMessage: (message: string) => void): Subscription;
  /** Publishes one message to the subscribers of every process. */
  abstract publish(message: string): Promise<void>;
  /** Says some process has listeners, for `ttlMs`. */
  abstract markListening(ttlMs: number): Promise<void>;
  /** True while some process says it has listeners. */
  abstract hasListeners(): Promise<boolean>;
}
