import type { QueueStore } from '../../core/ports';

/** Active jobs read per queue at most when GET /workers lists what each worker holds. */
export const HELD_SCAN_PER_QUEUE = 1000;
/** Job ids listed per worker at most. */
export const HELD_LIST_MAX = 100;

/**
 * The active jobs each worker holds, from Redis: per queue, up to
 * {@link HELD_SCAN_PER_QUEUE} ids of its active set (soonest lease expiry
 * first) and each one's holder (`w` of the job hash, set by the claim),
 * pipelined ({@link QueueStore.activeHolders}). Bounded work whatever the load: a worker holding jobs beyond
 * the scan shows fewer than it has (`count` then says at least).
 * @param queues the queues to look at (the caller's project's).
 * @returns per worker id: the number of held jobs seen and up to {@link HELD_LIST_MAX} of their ids (sorted).
 * @throws when Redis is unreachable.
 */
export async function heldJobs(store: QueueStore, queues: string[]): Promise<Map<string, { count: number; ids: string[] }>> {
  const out = new Map<string, { count: number; ids: string[] }>();
  await Promise.all(
    queues.map(async (queue) => {
      for (const { id, workerId: w } of await store.activeHolders(queue, HELD_SCAN_PER_QUEUE)) {
        if (!w) continue;
        let e = out.get(w);
        if (!e) out.set(w, (e = { count: 0, ids: [] }));
        e.count++;
        if (e.ids.length < HELD_LIST_MAX) e.ids.push(id);
      }
    }),
  );
  for (const e of out.values()) e.ids.sort();
  return out;
}
