import type { DataSource } from 'typeorm';
import { UUID_RE } from '../../history/common';
import type { JobStore, QueueStore } from '../../core/ports';

/** Where a job lives and who holds it, as the lease endpoints need it. */
export interface JobLocation {
  queue: string;
  /** The worker that claimed it last (recorded on events); null if unknown. */
  workerId: string | null;
  /** The lease length its claim asked for (external claims record it on the job), ms; undefined if unknown. */
  leaseMs?: number;
  /** The lock token of the claim this process answered (known only from the in-memory map). */
  lockToken?: string;
}

/** The queue of a job by primary key (`jobs_pkey`). $1 = id. */
const JOB_QUEUE_SQL = `SELECT queue FROM jobs WHERE id = $1`;

/**
 * Finds the queue of a job id for `POST /jobs/:id/heartbeat|complete|fail`,
 * whose URLs do not name it. Cheapest first:
 * 1. an in-memory map filled by the claims this process answered (bounded,
 *    oldest entries dropped first) — the common case;
 * 2. the Postgres projection's row (primary-key read), then one HMGET of the
 *    job hash for its worker — a claim answered by another API replica;
 * 3. one HMGET per known queue, pipelined — a job claimed too recently to be
 *    mirrored yet, or Postgres unreachable.
 * Job ids are unique across queues and a job never changes queue, so a cached
 * queue never goes stale; a wrong token is still refused by the scripts.
 */
export class JobLocator {
  private readonly cache = new Map<string, JobLocation>();

  constructor(
    private readonly store: JobStore,
    private readonly queues: QueueStore,
    private readonly db: DataSource,
    private readonly maxEntries = 100_000,
  ) {}

  /** Records a job this process handed out. */
  remember(id: string, loc: JobLocation): void {
    this.cache.delete(id);
    this.cache.set(id, loc);
    if (this.cache.size > this.maxEntries) this.cache.delete(this.cache.keys().next().value as string);
  }

  /** Forgets a job whose attempt ended. */
  forget(id: string): void {
    this.cache.delete(id);
  }

  /**
   * @returns the job's location, or null when no store knows the id (or it is not a UUID).
   * @throws when Redis is unreachable.
   */
  async locate(id: string): Promise<JobLocation | null> {
    if (!UUID_RE.test(id)) return null;
    const key = id.toLowerCase();
    const hit = this.cache.get(key);
    if (hit) return hit;
    let queue: string | null = null;
    try {
      const rows: { queue: string }[] = await this.db.query(JOB_QUEUE_SQL, [key]);
      queue = rows[0]?.queue ?? null;
    } catch {
      // Postgres unreachable: Redis alone can still answer for a live job.
    }
    if (queue !== null) {
      const brief = await this.store.jobBrief(queue, key);
      return { queue, workerId: brief?.workerId ?? null, leaseMs: brief?.leaseMs };
    }
    const queues = await this.queues.list();
    const briefs = await Promise.all(queues.map((q) => this.store.jobBrief(q, key)));
    const i = briefs.findIndex((b) => b !== null);
    return i < 0 ? null : { queue: queues[i], workerId: briefs[i]!.workerId, leaseMs: briefs[i]!.leaseMs };
  }
}
