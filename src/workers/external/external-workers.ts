import { bareQueue, projectOf } from '../../core/project-queue';
import type { RedisClient } from '../../redis/connection';
import { externalWorkerKey, externalWorkersKey } from '../../redis/keys';

/** An external worker is shown (as `dead` once silent) this long after it was last seen, ms. */
export const KEEP_EXTERNAL_MS = 3_600_000;
/** This process writes what it saw at most this often, ms (never on the request's path). */
const FLUSH_MS = 1000;

/** What GET /workers reports of a worker known from its calls of the external protocol; times epoch ms. */
export interface ExternalWorkerInfo {
  id: string;
  /** Bare names of the queues of its project it claimed from. */
  queues: string[];
  /** Last `POST /queues/:name/claim` of this worker id, any queue (null when only its leases were seen). */
  lastClaimAt: number | null;
  /** Last call of any protocol endpoint (claim, heartbeat, complete, fail). */
  lastSeenAt: number;
  /** First call seen within the kept window. */
  firstSeenAt: number;
}

/**
 * External workers as the API sees them: the `workerId` of each claim (with
 * its queue) and the holder of each heartbeat, complete and fail. The
 * request only updates a Map in this process; a timer writes what changed
 * once a second in one pipeline: per worker a hash (`q:<queue>` → last
 * claim there, `lastClaimAt`, `lastSeenAt`, `firstSeenAt`) kept
 * {@link KEEP_EXTERNAL_MS} after the worker was last seen, and its id in a
 * sorted set by last seen. So the claim's cost is unchanged, and several
 * API replicas each add what they saw.
 *
 * Per project: a worker belongs to the project of the queues it calls
 * (src/core/project-queue.ts), and each project has its own set and hashes
 * (src/redis/keys.ts), so a project sees its own workers only, and the same
 * worker id in two projects is two workers. Queues are kept by bare name.
 */
export class ExternalWorkerTracker {
  /** What was seen since the last flush, per project, per worker id. */
  private dirty = new Map<string, Map<string, { queues: Map<string, number>; claimAt: number | null; seenAt: number }>>();
  private timer: NodeJS.Timeout | null = null;

  constructor(
    private readonly redis: RedisClient,
    private readonly prefix: string,
  ) {}

  start(): void {
    this.timer = setInterval(() => void this.flush().catch(() => undefined), FLUSH_MS);
    this.timer.unref();
  }

  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    await this.flush().catch(() => undefined);
  }

  /** A claim of `queue` (qualified name) by `workerId` (whether or not it got jobs). */
  claimed(workerId: string, queue: string, now = Date.now()): void {
    const d = this.entry(projectOf(queue), workerId, now);
    d.queues.set(bareQueue(queue), now);
    d.claimAt = now;
  }

  /** A heartbeat, complete or fail by `workerId` of a job of `queue` (qualified name). */
  seen(workerId: string | null, queue: string, now = Date.now()): void {
    if (workerId) this.entry(projectOf(queue), workerId, now);
  }

  private entry(project: string, workerId: string, now: number) {
    let byId = this.dirty.get(project);
    if (!byId) this.dirty.set(project, (byId = new Map()));
    let d = byId.get(workerId);
    if (!d) byId.set(workerId, (d = { queues: new Map(), claimAt: null, seenAt: now }));
    d.seenAt = Math.max(d.seenAt, now);
    return d;
  }

  /**
   * Writes what was seen since the last flush (one MULTI).
   * @throws when Redis is unreachable: that second's sightings are dropped, harmless (the worker calls again).
   */
  async flush(): Promise<void> {
    if (!this.dirty.size) return;
    const seen = this.dirty;
    this.dirty = new Map();
    const m = this.redis.multi();
    for (const [project, byId] of seen) {
      for (const [id, d] of byId) {
        const key = externalWorkerKey(this.prefix, id, project);
        const fields: Record<string, string | number> = { id, lastSeenAt: d.seenAt };
        for (const [q, at] of d.queues) fields[`q:${q}`] = at;
        if (d.claimAt !== null) fields.lastClaimAt = d.claimAt;
        m.hset(key, fields).hsetnx(key, 'firstSeenAt', d.seenAt).pexpire(key, KEEP_EXTERNAL_MS);
        m.zadd(externalWorkersKey(this.prefix, project), d.seenAt, id);
      }
    }
    await m.exec();
  }

  /**
   * Every external worker of `project` seen within {@link KEEP_EXTERNAL_MS}, most recently seen first; older ids are dropped from the set.
   * @throws when Redis is unreachable.
   */
  static async list(redis: RedisClient, prefix: string, project: string, now = Date.now()): Promise<ExternalWorkerInfo[]> {
    const setKey = externalWorkersKey(prefix, project);
    await redis.zremrangebyscore(setKey, '-inf', now - KEEP_EXTERNAL_MS);
    const ids = await redis.zrevrange(setKey, 0, 999);
    const hashes = await Promise.all(ids.map((id) => redis.hgetall(externalWorkerKey(prefix, id, project))));
    const out: ExternalWorkerInfo[] = [];
    for (const h of hashes) {
      if (!h.id) continue;
      const queues = Object.keys(h).filter((k) => k.startsWith('q:')).map((k) => k.slice(2)).sort();
      out.push({
        id: h.id, queues, lastClaimAt: h.lastClaimAt ? Number(h.lastClaimAt) : null, lastSeenAt: Number(h.lastSeenAt), firstSeenAt: Number(h.firstSeenAt ?? h.lastSeenAt),
      });
    }
    return out;
  }
}
