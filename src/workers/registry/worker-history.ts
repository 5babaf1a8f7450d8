import type { DataSource } from 'typeorm';
import type { WorkerRegistryStore } from '../../core/ports/workers';
import { WorkerRegistry } from './worker-registry';

/**
 * Copies the live worker registry (Redis) into the `workers` table, so the
 * history of worker processes outlives their Redis entries: one upsert per
 * call for every registered worker (dead ones keep their last heartbeat).
 * @returns the number of workers written.
 */
export async function mirrorWorkers(db: DataSource, registry: WorkerRegistryStore): Promise<number> {
  const workers = (await WorkerRegistry.list(registry)).filter((w) => w.hostname !== '' || w.status === 'dead');
  if (!workers.length) return 0;
  await db.query(
    `INSERT INTO workers (id, hostname, pid, queues, concurrency, started_at, last_heartbeat_at, status)
     SELECT id, h, pid, q, c, to_timestamp(sa / 1000.0), to_timestamp(hb / 1000.0), s
     FROM unnest($1::text[], $2::text[], $3::int[], $4::text[], $5::int[], $6::float8[], $7::float8[], $8::text[]) AS u(id, h, pid, q, c, sa, hb, s)
     ON CONFLICT (id) DO UPDATE SET
       -- a dead worker's Redis entry no longer has its details: keep what was recorded
       hostname = CASE WHEN EXCLUDED.status = 'dead' THEN workers.hostname ELSE EXCLUDED.hostname END,
       pid = CASE WHEN EXCLUDED.status = 'dead' THEN workers.pid ELSE EXCLUDED.pid END,
       queues = CASE WHEN EXCLUDED.status = 'dead' THEN workers.queues ELSE EXCLUDED.queues END,
       concurrency = CASE WHEN EXCLUDED.status = 'dead' THEN workers.concurrency ELSE EXCLUDED.concurrency END,
       started_at = CASE WHEN EXCLUDED.status = 'dead' THEN workers.started_at ELSE EXCLUDED.started_at END,
       last_heartbeat_at = GREATEST(workers.last_heartbeat_at, EXCLUDED.last_heartbeat_at),
       status = EXCLUDED.status`,
    [
      workers.map((w) => w.id),
      workers.map((w) => w.hostname),
      workers.map((w) => w.pid),
      workers.map((w) => w.queues.join(',')),
      workers.map((w) => w.concurrency),
      workers.map((w) => w.startedAt),
      workers.map((w) => w.lastHeartbeatAt),
      workers.map((w) => w.status),
    ],
  );
  return workers.length;
}
