import { Inject, Injectable, OnApplicationBootstrap, Optional } from '@nestjs/common';
import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import type { SluiceConfig } from '../../config/config';
import { LOGGER, SLUICE_CONFIG } from '../../config/config.module';
import { HandlerRegistry } from '../../handlers/handler-registry';
import { JobMetrics } from '../../metrics/job-metrics';
import type { Logger } from '../../logging/logger';
import { JobStore, QueueStore, StoreConnection, WakeSignals, WorkerRegistryStore } from '../../core/ports';
import { WorkerRegistry } from '../registry/worker-registry';
import { WorkerRuntime } from './worker-runtime';

/** Longest the shutdown waits for a registry write, ms. */
const REGISTRY_WAIT_MS = 1000;

/** Waits for `p` at most `ms`; never rejects. */
async function bounded(p: Promise<unknown> | undefined, ms: number): Promise<void> {
  if (!p) return;
  let timer: NodeJS.Timeout | undefined;
  await Promise.race([p.catch(() => undefined), new Promise<void>((r) => (timer = setTimeout(r, ms)))]);
  clearTimeout(timer);
}

/**
 * The worker role: runs a WorkerRuntime for the process lifetime, listens for
 * cancel requests, keeps the worker registry entry fresh, and drains on
 * shutdown (SIGTERM/SIGINT are routed here by main.ts).
 */
@Injectable()
export class WorkerService implements OnApplicationBootstrap {
  readonly workerId = `${hostname()}-${process.pid}-${randomBytes(3).toString('hex')}`;
  private runtime?: WorkerRuntime;
  private unsubscribeCancels?: () => void;
  private registry?: WorkerRegistry;

  constructor(
    @Inject(SLUICE_CONFIG) private readonly config: SluiceConfig,
    @Inject(LOGGER) private readonly log: Logger,
    private readonly workerRegistry: WorkerRegistryStore,
    private readonly jobs: JobStore,
    private readonly queues: QueueStore,
    private readonly connection: StoreConnection,
    private readonly signals: WakeSignals,
    private readonly handlers: HandlerRegistry,
    // The worker role's series of GET /metrics (src/metrics/metrics.module.ts).
    @Optional() private readonly metrics?: JobMetrics,
  ) {}

  async onApplicationBootstrap(): Promise<void> {
    const c = this.config;
    this.registry = new WorkerRegistry(this.workerRegistry, { id: this.workerId, queues: c.queues, concurrency: c.workerConcurrency }, c.heartbeatIntervalMs * 3);
    const waiter = this.signals.waiter(`sluice-wake-${this.workerId}`);
    this.runtime = new WorkerRuntime(
      { jobs: this.jobs, queues: this.queues, connection: this.connection },
      this.handlers.map,
      waiter,
      {
        workerId: this.workerId,
        queues: c.queues,
        concurrency: c.workerConcurrency,
        leaseMs: c.lockTtlMs,
        heartbeatIntervalMs: c.heartbeatIntervalMs,
        shutdownGraceMs: c.shutdownGraceMs,
        onHeartbeat: (active) => this.registry!.beat(active),
        onJobStarted: this.metrics ? (queue, type, waitMs) => this.metrics!.jobStarted(queue, type, waitMs) : undefined,
        onJobFinished: this.metrics ? (queue, type, outcome, ms) => this.metrics!.jobFinished(queue, type, outcome, ms) : undefined,
      },
      this.log.child({ component: 'worker', workerId: this.workerId }),
    );
    this.unsubscribeCancels = await this.signals.subscribeCancels(`sluice-cancel-${this.workerId}`, (jobId) => this.runtime?.cancelRequested(jobId));
    await this.registry.beat(0);
    this.runtime.start();
    this.log.info(
      { workerId: this.workerId, queues: c.queues, concurrency: c.workerConcurrency, handlers: this.handlers.types() },
      'worker started',
    );
  }

  private draining?: Promise<void>;

  /**
   * Drains the worker (see WorkerRuntime.stop). Idempotent. Called by the
   * composition root's shutdown order (src/app.module.ts), before the mirror
   * drains, so the events of released jobs are mirrored.
   */
  drain(): Promise<void> {
    this.draining ??= this.drainOnce();
    return this.draining;
  }

  private async drainOnce(): Promise<void> {
    if (!this.runtime) return;
    this.log.info({ workerId: this.workerId, active: this.runtime.activeCount }, 'worker draining');
    // The registry entry is a courtesy (it expires by itself): a stalled Redis must not hold the shutdown for it.
    await bounded(this.registry?.draining(this.runtime.activeCount), REGISTRY_WAIT_MS);
    await this.runtime.stop();
    await bounded(this.registry?.remove(), REGISTRY_WAIT_MS);
    this.unsubscribeCancels?.();
    this.log.info({ workerId: this.workerId }, 'worker stopped');
  }

  get active(): number {
    return this.runtime?.activeCount ?? 0;
  }
}
