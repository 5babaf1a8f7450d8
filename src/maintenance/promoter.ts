import type { JobStore, QueueStore } from '../core/ports';
import { forEachQueue } from './each-queue';

/** Jobs moved per script call, so one call never blocks Redis for long. */
export const PROMOTE_BATCH = 1000;

/**
 * One pass of delayed promotion over every queue: delayed jobs whose runAt
 * has come move to waiting (lua/promoteDelayed-5.lua). A safety net: workers
 * wake when a delayed job is due and claims promote too. A queue that fails
 * does not stop the others (each-queue.ts).
 * @returns the jobs moved.
 * @throws when Redis fails for some queue, after the others were promoted (the next pass goes on).
 */
export async function promoteDueJobs(stores: { jobs: JobStore; queues: QueueStore }): Promise<number> {
  let total = 0;
  await forEachQueue(await stores.queues.list(), async (q) => {
    let r;
    do {
      r = await stores.jobs.promoteDelayed(q, PROMOTE_BATCH);
      total += r.promoted;
    } while (r.promoted === PROMOTE_BATCH);
  });
  return total;
}
