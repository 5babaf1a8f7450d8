import type { RedisJobStore } from '../redis/redis-job-store';
import { readBacklog } from '../mirror/backlog';

/**
 * The dashboard's `auditLagMs`: how far the Postgres history trails Redis.
 * @returns `lagMs`: age in ms of the oldest events-stream entry not yet
 *   mirrored (0 when fully caught up, Redis clock); `pending`: entries waiting.
 * @throws when Redis is unreachable.
 */
export async function auditLag(store: RedisJobStore): Promise<{ lagMs: number; pending: number }> {
  const b = await readBacklog(store.redis, store);
  return { lagMs: b.lagMs, pending: b.pending };
}
