import { bareQueue, projectOf } from '../../core/project-queue';
import type { ExternalSighting, ExternalWorkerInfo, ExternalWorkerSeen } from '../../core/ports/external-workers';

export type { ExternalWorkerInfo } from '../../core/ports/external-workers';

/** An external worker is shown (as `dead` once silent) this long after it was last seen, ms. */
export const KEEP_EXTERNAL_MS = 3_600_000;
/** This process writes what it saw at most this often, ms (never on the request's path). */
const FLUSH_MS = 1000;

/**
 * External workers as the API sees them: the `workerId` of each claim (with
 * its queue) and the holder of each heartbeat, complete and fail. The
 * request only updates a Map in this process; a timer writes what changed
 * once a second in one atomic step ({@link ExternalWorkerSeen}, src/redis/stores/external-workers-seen.ts):
 * per worker its queues (each with its last claim there), `lastClaimAt`, `lastSeenAt`,
 * `firstSeenAt`, kept {@link KEEP_EXTERNAL_MS} after the worker was last seen. So the claim's cost is unchanged, and several
 * API replicas each add what they saw.
 *
 * Per project: a worker belongs to the project of the queues it calls
 * (src/core/project-queue.ts), and each project has its own entries
 * (src/redis/keys.ts), so a project sees its own workers only, and the same
 * worker id in two projects is two workers. Queues are kept by bare name.
 */
export class ExternalWorkerTracker {
  /** What was seen since the last flush, per project, per worker id. */
  private dirty = new Map<string, Map<string, { queues: Map<string, number>; claimAt: number | null; seenAt: number }>>();
  private timer: NodeJS.Timeout | null = null;

  constructor(private readonly store: ExternalWorkerSeen) {}

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
   * Writes what was seen since the last flush (one atomic step).
   * @throws when Redis is unreachable: that second's sightings are dropped, harmless (the worker calls again).
   */
  async flush(): Promise<void> {
    if (!this.dirty.size) return;
    const seen = this.dirty;
    this.dirty = new Map();
    const sightings: ExternalSighting[] = [];
    for (const [project, byId] of seen) {
      for (const [id, d] of byId) sightings.push({ project, id, seenAt: d.seenAt, claimAt: d.claimAt, queues: d.queues });
    }
    await this.store.record(sightings, KEEP_EXTERNAL_MS);
  }

  /**
   * Every external worker of `project` seen within {@link KEEP_EXTERNAL_MS}, most recently seen first; older ids are dropped from the set.
   * @throws when Redis is unreachable.
   */
  static list(store: ExternalWorkerSeen, project: string, now = Date.now()): Promise<ExternalWorkerInfo[]> {
    return store.list(project, now - KEEP_EXTERNAL_MS);
  }
}
