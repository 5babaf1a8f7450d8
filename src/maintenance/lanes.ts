import type { QueueStore } from '../core/ports';
import { forEachQueue } from './each-queue';

/**
 * One pass over every queue finishing moves into lanes (flow control per
 * key, lua/includes/lanes.lua): a queue in turns mode that met a job of
 * another priority, or a configure call interrupted mid-rebuild. One HGET
 * per queue when there is nothing to do; a move runs in chunks of 1,000 jobs
 * (lua/rebuildLanes-3.lua), safe to run twice at once (every step is
 * idempotent). A queue that fails does not stop the others (each-queue.ts).
 * @returns the queues whose move was finished.
 * @throws when Redis fails for some queue, after the others were handled.
 */
export async function finishLaneMoves(queues: QueueStore): Promise<number> {
  let moved = 0;
  await forEachQueue(await queues.list(), async (q) => {
    if (await queues.finishLaneMove(q)) moved++;
  });
  return moved;
}
