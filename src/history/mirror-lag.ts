import type { MirrorStream, QueueStore } from '../core/ports';

/**
 * The dashboard's `auditLagMs`: how far the Postgres history trails Redis.
 * @returns `lagMs`: age in ms of the oldest events-stream entry not yet
 *   mirrored (0 when fully caught up, Redis clock); `pending`: entries waiting.
 * @throws when Redis is unreachable.
 */
export async function mirrorLag(queues: QueueStore, mirror: MirrorStream): Promise<{ lagMs: number; pending: number }> {
  const b = await mirror.backlog(await queues.list());
  return { lagMs: b.lagMs, pending: b.pending };
}
