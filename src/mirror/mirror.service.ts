import { Inject, Injectable, OnApplicationBootstrap, Optional } from '@nestjs/common';
import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import type { DataSource } from 'typeorm';
import type { SluiceConfig } from '../config/config';
import { LOGGER, SLUICE_CONFIG } from '../config/config.module';
import type { Logger } from '../logging/logger';
import { FlowRecordStore, FlowRestoreStore, LiveEvents, MirrorStream, QueueOwnership, QueueStore, RestoreStore, StoreConnection, WorkerRegistryStore } from '../core/ports';
import { readBacklog } from './backlog';
import { MirrorMetrics } from './mirror-metrics';
import type { Registry } from 'prom-client';
import { METRICS_REGISTRY } from '../metrics/metrics.module';
import { MirrorWriter, type MirrorStores } from './mirror-writer';
import { POSTGRES_DB } from '../postgres/postgres.module';
import { formatRestoreReport, QueueRestorer, type RestoreStores } from '../restore/restore';
import { createRoleWriter, roleRestorer } from './role-writer';
import { RedisLossWatch } from '../restore/loss-watch';
import { RestoreMetrics } from '../restore/restore-metrics';
import { mirrorWorkers } from '../workers/registry/worker-history';
import { MirrorWriterThread } from './writer-thread';
import { join } from 'node:path';
import { KeyStore } from '../auth/key-store';
import { ProjectStore } from '../auth/project-store';
import { SettingsKeeper } from '../queues/settings-keeper';

/** How often the worker registry is copied into the `workers` table. */
const WORKERS_INTERVAL_MS = 5_000;
/** Longest wait on shutdown for the streams to be mirrored. */
const SHUTDOWN_DRAIN_MS = 3_000;

/** The `audit` role: runs an MirrorWriter (retention pruning runs in the scheduler role). */
@Injectable()
export class MirrorService implements OnApplicationBootstrap {
  readonly writerId = `audit-${hostname()}-${process.pid}-${randomBytes(3).toString('hex')}`;
  /**
   * The writer's metrics (batches, batch sizes, quarantined entries…),
   * whether it runs on this thread or in its worker thread, on a registry of
   * their own: put them on the process's `/metrics` registry with
   * `mirrorService.metrics.registerOn(registry)`.
   */
  readonly metrics = new MirrorMetrics();
  private writer?: MirrorWriter;
  private thread?: MirrorWriterThread;
  private workersTimer?: NodeJS.Timeout;
  private watch?: RedisLossWatch;
  private readonly restoreMetrics?: RestoreMetrics;
  private readonly stores: MirrorStores & RestoreStores;

  constructor(
    @Inject(SLUICE_CONFIG) private readonly config: SluiceConfig,
    @Inject(LOGGER) private readonly log: Logger,
    @Inject(POSTGRES_DB) private readonly db: DataSource,
    queues: QueueStore,
    mirror: MirrorStream,
    ownership: QueueOwnership,
    restore: RestoreStore,
    connection: StoreConnection,
    liveEvents: LiveEvents,
    private readonly workerRegistry: WorkerRegistryStore,
    flows: FlowRecordStore,
    flowRestore: FlowRestoreStore,
    private readonly keys: KeyStore,
    private readonly projects: ProjectStore,
    @Optional() @Inject(METRICS_REGISTRY) registry?: Registry,
  ) {
    // The process's /metrics serves the writer's series too (every role has MetricsModule).
    if (registry) {
      this.metrics.registerOn(registry);
      this.restoreMetrics = new RestoreMetrics(registry);
    }
    this.stores = { queues, mirror, ownership, restore, connection, liveEvents, flows, flowRestore };
  }

  /**
   * The restore check first (queues whose Redis state is lost are rebuilt
   * from PostgreSQL, the others get their epoch recorded), then the writer,
   * which runs the same check on each queue it takes over later.
   */
  async onApplicationBootstrap(): Promise<void> {
    // A queue whose mirror lock another process holds is not waited for long:
    // that process is restoring it, or this writer checks it when it takes it over.
    const restorer = roleRestorer(this.db, this.stores, this.log);
    const settings = new SettingsKeeper(this.db, this.stores.queues, this.log.child({ component: 'queue-settings' }));
    // Redis lost or rewound while running: noticed at each reconnect and every REDIS_CHECK_INTERVAL_MS.
    this.watch = new RedisLossWatch(this.db, this.stores, restorer, {
      intervalMs: this.config.redisCheckIntervalMs,
      log: this.log.child({ component: 'restore' }),
      onRebuild: (r) => this.restoreMetrics?.rebuilt(r),
      registries: () => this.registries(settings),
      eachPass: () => settings.saveUnsaved(),
    });
    // What Redis holds beside the jobs first (an external queue is external before its jobs come back).
    const state = await this.stores.restore.state().catch(() => null);
    if (state && !state.installed) await this.watch.restoreRegistries().catch(() => undefined);
    try {
      const reports = await restorer.checkAll();
      const acted = reports.filter((r) => r.action !== 'intact');
      for (const r of acted) {
        const line = formatRestoreReport(r);
        if (r.action === 'error') this.log.error({ queue: r.queue, counts: r.counts }, `restore check: ${line}`);
        else if (r.action === 'busy') this.log.warn({ queue: r.queue }, `restore check: ${line}`);
        else this.log.info({ queue: r.queue, action: r.action, counts: r.counts }, `restore check: ${line}`);
      }
      this.log.info(
        { queues: reports.length, restored: reports.filter((r) => r.action === 'restored').length },
        acted.some((r) => r.action === 'restored') ? 'restore check: redis state rebuilt from postgres' : 'restore check: nothing to restore',
      );
    } catch (e) {
      // The writer runs the same check per queue when it takes one over.
      this.log.error({ err: (e as Error).message }, 'restore check failed');
    }
    if (this.useThread()) {
      this.thread = new MirrorWriterThread(
        join(__dirname, 'writer-thread.js'),
        this.config,
        this.writerId,
        this.log.child({ component: 'audit', writerId: this.writerId }),
        this.metrics,
      );
      this.thread.start();
    } else this.startInProcess(restorer);
    this.watch.start();
    this.workersTimer = setInterval(() => {
      mirrorWorkers(this.db, this.workerRegistry).catch((e) =>
        this.log.debug({ err: (e as Error).message }, 'worker history not mirrored this time'),
      );
    }, WORKERS_INTERVAL_MS);
    this.workersTimer.unref?.();
    this.log.info({ writerId: this.writerId, thread: !!this.thread }, 'audit writer started');
  }

  /**
   * The registries PostgreSQL keeps, given back to Redis (RedisLossWatch.restoreRegistries):
   * API keys (revoked ones removed), projects, queue settings and key overrides.
   * @throws when PostgreSQL or Redis fail.
   */
  private async registries(settings: SettingsKeeper): Promise<Record<string, number>> {
    const keys = await this.keys.reconcile();
    const projects = await this.projects.reconcile();
    const s = await settings.restoreAll();
    if (s.failed) throw new Error(`the settings of ${s.failed} queues were not given back`);
    return { keys: keys.restored, keysRemoved: keys.removed, projects, queueSettings: s.restored, queueSettingsSaved: s.saved };
  }

  /**
   * The writer runs in a worker thread when this process also runs other
   * roles (and AUDIT_THREAD is not false), and only from the build: the
   * thread entry is compiled JavaScript (tests that run the TypeScript
   * sources in-process use the main thread).
   */
  private useThread(): boolean {
    const others = [...this.config.roles].some((r) => r !== 'audit');
    return this.config.auditThread && others && __filename.endsWith('.js');
  }

  private startInProcess(restorer: QueueRestorer): void {
    this.writer = createRoleWriter(this.stores, this.db, this.config, this.writerId, this.log, restorer, undefined, this.metrics);
    this.writer.start();
  }

  /**
   * Mirrors what is still in the streams (the events of jobs the workers of
   * this process just released, for one) for up to SHUTDOWN_DRAIN_MS, then
   * stops. Called by the composition root's shutdown order
   * (src/app.module.ts), after the workers of this process drained.
   */
  async drain(): Promise<void> {
    clearInterval(this.workersTimer);
    await this.watch?.stop();
    const until = Date.now() + SHUTDOWN_DRAIN_MS;
    while ((this.writer || this.thread) && Date.now() < until) {
      const b = await readBacklog(this.stores).catch(() => ({ pending: 0 }));
      if (b.pending === 0) break;
      await new Promise((r) => setTimeout(r, 20));
    }
    await this.writer?.stop();
    await this.thread?.stop();
  }
}
