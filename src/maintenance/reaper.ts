import type { JobStore, QueueStore } from '../core/ports';

/** Jobs moved per script call, so one call never blocks Redis for long. */
export const REAP_BATCH = 1000;

/**
 * One pass of the lease reaper over every queue: jobs whose lease expired go
 * back to waiting (or to the DLQ when their attempts are spent) with a
 * `stalled` event (lua/reapExpired-6.lua). Safe with N replicas: the script
 * compares state and lock token, so a second reaper moves nothing.
 * @param onReaped called per queue with the jobs moved there (metrics).
 * @returns the jobs moved.
 * @throws when Redis fails (the next pass goes on).
 */
export async function reapExpiredLeases(stores: { jobs: JobStore; queues: QueueStore }, onReaped?: (queue: string, n: number) => void): Promise<number> {
  let total = 0;
  for (const q of await stores.queues.list()) {
    let r;
    do {
      r = await stores.jobs.reapExpired(q, REAP_BATCH);
      total += r.reaped;
      onReaped?.(q, r.reaped);
    } while (r.reaped === REAP_BATCH);
  }
  return total;
}
