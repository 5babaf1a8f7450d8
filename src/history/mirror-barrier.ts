import type { MirrorStream } from '../core/ports';
import { compareIds } from '../core/stream-ids';

import { sleep } from '../core/sleep';

/**
 * Read-your-writes for the history endpoints: waits until the mirror writers
 * have mirrored every event that was in the given queues' streams when the
 * call started, so a client that saw a job `completed` in Redis then finds
 * its events, executions and counts in PostgreSQL.
 *
 * Mirrored entries leave the stream (after its transaction commits the
 * writer XACKs them and trims or XDELs them: lua/ackEvents-1.lua), so
 * "mirrored up to X" is "the oldest entry left is newer than X". A queue no
 * writer holds is waited for only while some writer runs (a brand-new queue
 * is taken over at once, others within an ownership round): with no audit
 * role running nothing is waited for. Nothing is waited for past `maxWaitMs`
 * (a slow or stalled mirror answers with what it has rather than hang).
 *
 * @param queues the queues to settle; their streams are read with one
 *   XREVRANGE/XRANGE each (cheap when nothing is pending).
 * @returns true when every queue caught up, false when it gave up.
 */
export async function waitForMirror(stream: MirrorStream, queues: string[], maxWaitMs = 2000, pollMs = 5): Promise<boolean> {
  const deadline = Date.now() + maxWaitMs;
  const [tails, writersRun] = await Promise.all([Promise.all(queues.map((q) => stream.tail(q))), stream.writersRunning()]);
  const targets = tails.flatMap((t, i) => (t.lastId !== null && (t.owned || writersRun) ? [{ queue: queues[i], id: t.lastId }] : []));
  let pending = targets;
  while (pending.length) {
    const oldest = await Promise.all(pending.map((t) => stream.oldestId(t.queue)));
    pending = pending.filter((t, i) => oldest[i] !== null && compareIds(oldest[i]!, t.id) <= 0);
    if (!pending.length) return true;
    if (Date.now() >= deadline) return false;
    await sleep(pollMs);
  }
  return true;
}
