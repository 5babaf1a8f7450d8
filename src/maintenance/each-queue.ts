/**
 * Runs `fn` for every queue in turn; a queue whose call fails does not stop
 * the others. On a Redis Cluster each queue lives on one shard, and while a
 * shard fails over (its master died, its replica not yet promoted) calls for
 * its queues fail or hang until ioredis gives up on them: the queues on the
 * other shards must still be reaped and promoted meanwhile.
 * @throws Error naming the queues that failed (and the first error), after all were tried.
 */
export async function forEachQueue(queues: string[], fn: (queue: string) => Promise<void>): Promise<void> {
  const failed: string[] = [];
  let first: unknown;
  for (const q of queues) {
    try {
      await fn(q);
    } catch (e) {
      if (!failed.length) first = e;
      failed.push(q);
    }
  }
  if (failed.length) {
    throw new Error(`${failed.length} of ${queues.length} queues failed (${failed.slice(0, 5).join(', ')}${failed.length > 5 ? ', …' : ''}): ${(first as Error)?.message ?? String(first)}`);
  }
}
