import type { JobContext } from '../core/handler';
import type { Json } from '../core/job';

/** The shape of a class decorated with @JobHandler. */
export interface JobHandlerClass {
  handle(payload: Record<string, Json>, ctx: JobContext): Promise<Json | void> | Json | void;
}

/** Resolves after `ms`, or rejects with the signal's reason when it aborts. */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(new Error(`aborted: ${String(signal.reason)}`));
    const t = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    const onAbort = () => {
      clearTimeout(t);
      reject(new Error(`aborted: ${String(signal?.reason)}`));
    };
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}
