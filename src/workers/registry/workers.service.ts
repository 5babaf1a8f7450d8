import { Inject, Injectable } from '@nestjs/common';
import { DEFAULT_PROJECT } from '../../auth/principal';
import type { SluiceConfig } from '../../config/config';
import { SLUICE_CONFIG } from '../../config/config.module';
import { ExternalWorkerTracker } from '../external/external-workers';
import { iso, WithIsoTimes } from '../../http/api-job';
import { WorkerInfo, WorkerRegistry } from './worker-registry';
import { bareQueue, inProject } from '../../core/project-queue';
import { ExternalWorkerSeen, QueueStore, WorkerRegistryStore } from '../../core/ports';
import { heldJobs } from './held-jobs';

/**
 * The API.md worker object: the registry's WorkerInfo with its times as ISO
 * strings, plus (v1.1 console, additive) `kind`, `jobs` (ids of the active
 * jobs it holds, at most 100) and `lastClaimAt` (external workers).
 */
export type ApiWorker = WithIsoTimes<WorkerInfo, 'startedAt' | 'lastHeartbeatAt'> & {
  kind: 'process' | 'external';
  jobs?: string[];
  lastClaimAt: string | null;
};

/**
 * Reads the workers: the in-process ones from the registry that worker
 * processes keep in Redis (src/workers/registry/worker-registry.ts: one hash per
 * worker, `dead` after three missed heartbeats until the scheduler's sweep
 * drops it), and the external ones the API saw calling the external worker
 * protocol (src/workers/external/external-workers.ts: `running` while seen within
 * max(2 × LOCK_TTL_MS, 60 s), then `dead`, listed for an hour).
 */
@Injectable()
export class WorkersApiService {
  constructor(
    private readonly registry: WorkerRegistryStore,
    private readonly externalSeen: ExternalWorkerSeen,
    @Inject(SLUICE_CONFIG) private readonly config: SluiceConfig,
    private readonly queues: QueueStore,
  ) {}

  /**
   * The workers that serve `project`: in-process ones (oldest heartbeat
   * first), then its external ones (most recently seen first).
   * In-process workers are server processes shared by every project (their
   * handlers are server code): one with `QUEUES=*` serves every project's
   * queues and is shown to each as `["*"]`; one with a QUEUES list is shown
   * to a project with that list cut to the project's queues (bare names),
   * and not at all to a project none of its queues belongs to. A dead entry
   * whose details expired (no queues known) is shown to `default` only.
   * External workers belong to the project of the queues they call
   * (src/workers/external/external-workers.ts). `jobs` lists the project's jobs only.
   * @param opts.held also read the jobs each one holds (GET /workers; the dashboard's counts skip it).
   * @throws when Redis is unreachable.
   */
  async list(project = DEFAULT_PROJECT, opts: { held?: boolean } = {}): Promise<ApiWorker[]> {
    const now = Date.now();
    const [workers, external] = await Promise.all([
      WorkerRegistry.list(this.registry),
      ExternalWorkerTracker.list(this.externalSeen, project, now),
    ]);
    const held = opts.held ? await heldJobs(this.queues, (await this.queues.list()).filter((q) => inProject(q, project))) : null;
    const aliveMs = Math.max(2 * this.config.lockTtlMs, 60_000);
    const out: ApiWorker[] = [];
    for (const w of workers) {
      const queues = w.queues.includes('*') ? ['*'] : w.queues.filter((q) => inProject(q, project)).map(bareQueue);
      if (queues.length === 0 && (w.queues.length > 0 || project !== DEFAULT_PROJECT)) continue;
      out.push({
        ...w,
        queues,
        startedAt: iso(w.startedAt),
        lastHeartbeatAt: iso(w.lastHeartbeatAt),
        kind: 'process',
        lastClaimAt: null,
        ...(held ? { jobs: held.get(w.id)?.ids ?? [] } : {}),
      });
    }
    const known = new Set(out.map((w) => w.id));
    for (const x of external) {
      if (known.has(x.id)) continue;
      const h = held?.get(x.id);
      out.push({
        id: x.id, hostname: '', pid: 0, queues: x.queues, concurrency: 0, active: h?.count ?? 0,
        startedAt: iso(x.firstSeenAt), lastHeartbeatAt: iso(x.lastSeenAt), status: now - x.lastSeenAt > aliveMs ? 'dead' : 'running',
        kind: 'external', lastClaimAt: iso(x.lastClaimAt), ...(held ? { jobs: h?.ids ?? [] } : {}),
      });
    }
    return out;
  }
}
