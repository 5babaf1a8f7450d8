import type { RedisJobStore } from '../redis/redis-job-store';
import { compareIds } from '../mirror/stream-ids';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * Read-your-writes for the history endpoints: waits until the audit writers
 * have mirrored every event that was in the given queues' streams when the
 * call started, so a client that saw a job `completed` in Redis then finds
 * its events, executions and counts in PostgreSQL.
 *
 * Mirrored entries leave the stream (after its transaction commits the
 * writer XACKs them and trims or XDELs them: lua/ackEvents-1.lua), so
 * "mirrored up to X" is "the oldest entry left is newer than X". A queue no writer holds (no audit role running, or not
 * yet taken over) is not waited for; neither is anything past `maxWaitMs`
 * (a slow or stalled mirror answers with what it has rather than hang).
 *
 * @param queues the queues to settle; their streams are read with one
 *   XREVRANGE/XRANGE each (cheap when nothing is pending).
 * @returns true when every queue caught up, false when it gave up.
 */
export async function waitForMirror(store: RedisJobStore, queues: string[], maxWaitMs = 2000, pollMs = 5): Promise<boolean> {
  const redis = store.redis;
  const deadline = Date.now() + maxWaitMs;
  const targets = (
    await Promise.all(
      queues.map(async (q) => {
        const k = store.keys(q);
        const [last, owner] = await Promise.all([redis.xrevrange(k.events, '+', '-', 'COUNT', 1), redis.exists(k.auditLock)]);
        return last.length && owner ? { key: k.events, id: last[0][0] } : null;
      }),
    )
  ).filter((t): t is { key: string; id: string } => t !== null);
  let pending = targets;
  while (pending.length) {
    const oldest = await Promise.all(pending.map((t) => redis.xrange(t.key, '-', '+', 'COUNT', 1)));
    pending = pending.filter((t, i) => oldest[i].length > 0 && compareIds(oldest[i][0][0], t.id) <= 0);
    if (!pending.length) return true;
    if (Date.now() >= deadline) return false;
    await sleep(pollMs);
  }
  return true;
}
