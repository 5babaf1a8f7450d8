import type { JobStore, QueueStore } from '../core/ports';
import { forEachQueue } from './each-queue';

/** Jobs moved per script call, so one call never blocks Redis for long. */
export const REAP_BATCH = 1000;

/**
 * One pass of the lease reaper over every queue: jobs whose lease expired go
 * back to waiting (or to the DLQ when their attempts are spent) with a
 * `stalled` event (lua/reapExpired-6.lua). Safe with N replicas: the script
 * compares state and lock token, so a second reaper moves nothing. A queue
 * that fails (its Redis Cluster shard failing over) does not stop the others
 * (each-queue.ts).
 * @param onReaped called per queue with the jobs moved there (metrics).
 * @returns the jobs moved.
 * @throws when Redis fails for some queue, after the others were reaped (the next pass goes on).
 */
export async function reapExpiredLeases(stores: { jobs: JobStore; queues: QueueStore }, onReaped?: (queue: string, n: number) => void): Promise<number> {
  let total = 0;
  await forEachQueue(await stores.queues.list(), async (q) => {
    let r;
    do {
      r = await stores.jobs.reapExpired(q, REAP_BATCH);
      total += r.reaped;
      onReaped?.(q, r.reaped);
    } while (r.reaped === REAP_BATCH);
  });
  return total;
}
