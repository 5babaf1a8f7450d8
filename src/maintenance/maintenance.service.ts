import { Inject, Injectable, OnApplicationBootstrap, OnApplicationShutdown, Optional } from '@nestjs/common';
import { SchedulerRegistry } from '@nestjs/schedule';
import type { DataSource } from 'typeorm';
import { POSTGRES_DB } from '../postgres/postgres.module';
import { pruneFinishes, pruneFinishMinutes, pruneHistory, pruneOperatorAudit } from './retention';
import { DAY_MS, PARTITION_DAYS_AHEAD, ensureDays } from '../postgres/partitions';
import { retireExpiredDays } from '../postgres/partition-retire';
import type { SluiceConfig } from '../config/config';
import { LOGGER, SLUICE_CONFIG } from '../config/config.module';
import type { Logger } from '../logging/logger';
import { SchedulerMetrics } from '../metrics/scheduler-metrics';
import { FlowRecordStore, JobStore, QueueStore, WorkerRegistryStore } from '../core/ports';
import { WorkerRegistry } from '../workers/registry/worker-registry';
import { promoteDueJobs } from './promoter';
import { reapExpiredLeases } from './reaper';
import { finishLaneMoves } from './lanes';
import { FlowWorkerLoop } from '../flows/flow-loop';

/** Safety-net promotion period; workers already wake exactly when a delayed job is due. */
const PROMOTE_INTERVAL_MS = 1000;
/** How often unfinished moves into lanes are looked for (lanes.ts): one HGET per queue. */
const LANE_MOVE_INTERVAL_MS = 1000;
/** A failing maintenance task logs at most once per this many ms (with the count of failures). */
const FAILURE_LOG_EVERY_MS = 5000;
/** Dead workers stay listed (status "dead") this long before the sweep drops them. */
const DEAD_WORKER_KEEP_MS = 3_600_000;
/** Retention pass period: hourly is plenty for a days-long retention. */
const PRUNE_INTERVAL_MS = 3_600_000;
/** pg advisory lock key held by the one replica pruning at a time. */
const RETENTION_LOCK = 774412;

/**
 * The scheduler role's periodic maintenance loops, one file each (as River's
 * maintenance services), scheduled here with
 * @nestjs/schedule's SchedulerRegistry (intervals come from the config, so
 * static @Interval decorators do not fit):
 * - lease reaper every REAPER_INTERVAL_MS (reaper.ts: stalled jobs back to waiting / DLQ),
 * - delayed promotion every second (promoter.ts: a safety net; claims promote too),
 * - dead-worker sweep every minute (src/workers/registry/worker-registry.ts),
 * - PostgreSQL retention pruning (src/maintenance/retention.ts) every hour: the job
 *   history and the operator audit log.
 * Each Redis pass is one atomic script per queue, so N replicas are safe: the
 * compare-and-set inside the scripts makes a second reaper a no-op.
 * Pruning deletes by id in short statements (a row two replicas both select
 * is deleted once; the other DELETE finds nothing), and a Postgres advisory
 * lock lets one replica prune at a time so they do not contend for the same
 * rows.
 */
@Injectable()
export class MaintenanceService implements OnApplicationBootstrap, OnApplicationShutdown {
  private busy = new Set<string>();
  private flowLoop: FlowWorkerLoop | null = null;

  constructor(
    @Inject(SLUICE_CONFIG) private readonly config: SluiceConfig,
    @Inject(LOGGER) private readonly log: Logger,
    private readonly workers: WorkerRegistryStore,
    private readonly store: JobStore,
    private readonly queues: QueueStore,
    private readonly flows: FlowRecordStore,
    private readonly scheduler: SchedulerRegistry,
    @Optional() @Inject(POSTGRES_DB) private readonly db?: DataSource,
    @Optional() private readonly metrics?: SchedulerMetrics,
  ) {}

  onApplicationBootstrap(): void {
    this.every('reaper', this.config.reaperIntervalMs, () => this.reapAll());
    this.every('promoter', PROMOTE_INTERVAL_MS, () => this.promoteAll());
    this.every('lane-moves', LANE_MOVE_INTERVAL_MS, () => finishLaneMoves(this.queues));
    // The flow worker (src/flows/flow-loop.ts): woken by each queue's flow outbox, and a sweep every second.
    this.flowLoop = new FlowWorkerLoop(this.flows, this.failureLogger('flows', 0));
    void this.flowLoop.start().catch(this.failureLogger('flows', 0));
    this.every('worker-sweep', 60_000, () => WorkerRegistry.sweep(this.workers, DEAD_WORKER_KEEP_MS));
    if (this.db) {
      this.every('retention', PRUNE_INTERVAL_MS, () => this.pruneOnce());
      // The days ahead at start too: a server down for days comes back to partitions for today.
      void this.pruneOnce({ rows: false }).catch(this.failureLogger('retention', 0));
    }
  }

  /**
   * One retention pass, unless another replica is running one right now:
   * the history's day partitions made {@link PARTITION_DAYS_AHEAD} days
   * ahead and the expired ones retired whole (src/postgres/partition-retire.ts),
   * then the rows below the cutoff left in the `_kept` and `_legacy`
   * partitions pruned (src/maintenance/retention.ts), and the counters' and
   * the operator log's old rows.
   * @param opts.rows false: partitions only (the pass at start).
   * @returns rows deleted from `jobs` row by row (the retired days' jobs not counted), or null when skipped (no database, or the lock is held elsewhere).
   * @throws whatever PostgreSQL answers but a lock wait (a partition step that gave way is tried next pass).
   */
  async pruneOnce(opts: { rows?: boolean } = {}): Promise<number | null> {
    if (!this.db) return null;
    const qr = this.db.createQueryRunner();
    try {
      const [{ got }] = await qr.query('SELECT pg_try_advisory_lock($1) AS got', [RETENTION_LOCK]);
      if (!got) return null;
      try {
        const now = Date.now();
        const made = await ensureDays(this.db, now - DAY_MS, now + PARTITION_DAYS_AHEAD * DAY_MS).catch((e: unknown) => {
          if (lockWait(e)) return [];
          throw e;
        });
        const retired = await retireExpiredDays(this.db, this.config.retentionDays, now);
        if (made.length || retired.length) this.log.info({ made, retired, retentionDays: this.config.retentionDays }, 'history partitions');
        if (opts.rows === false) return 0;
        const n = await pruneHistory(this.db, this.config.retentionDays);
        await pruneFinishes(this.db);
        await pruneFinishMinutes(this.db, this.config.retentionDays);
        const ops = await pruneOperatorAudit(this.db, this.config.retentionDays);
        if (n || ops) this.log.info({ pruned: n, operatorAudit: ops, retentionDays: this.config.retentionDays }, 'history pruned');
        return n;
      } finally {
        await qr.query('SELECT pg_advisory_unlock($1)', [RETENTION_LOCK]);
      }
    } finally {
      await qr.release();
    }
  }

  async onApplicationShutdown(): Promise<void> {
    for (const name of this.scheduler.getIntervals()) this.scheduler.deleteInterval(name);
    await this.flowLoop?.stop();
  }

  /** One pass of the reaper over every queue (reaper.ts). Returns the jobs moved. */
  async reapAll(): Promise<number> {
    const total = await reapExpiredLeases({ jobs: this.store, queues: this.queues }, (q, n) => this.metrics?.leasesReaped(q, n));
    if (total) this.log.info({ reaped: total }, 'reaper moved jobs with expired leases');
    return total;
  }

  /** One pass of delayed promotion over every queue (promoter.ts). Returns the jobs moved. */
  promoteAll(): Promise<number> {
    return promoteDueJobs({ jobs: this.store, queues: this.queues });
  }

  /**
   * Runs `fn` every `ms`, never overlapping itself, logging (not throwing)
   * errors: at most one line per task per {@link FAILURE_LOG_EVERY_MS}, with
   * the failures since the last (a task every 20 ms must not flood the log
   * while Redis is away).
   */
  private every(name: string, ms: number, fn: () => Promise<unknown>): void {
    const failed = this.failureLogger(name, ms);
    const timer = setInterval(async () => {
      if (this.busy.has(name)) return;
      this.busy.add(name);
      try {
        await fn();
      } catch (e) {
        failed(e);
      } finally {
        this.busy.delete(name);
      }
    }, ms);
    timer.unref?.();
    this.scheduler.addInterval(name, timer);
  }

  /**
   * A task's failure handler: logs at most one line per
   * max(`ms`, {@link FAILURE_LOG_EVERY_MS}) with the failures since the last.
   */
  private failureLogger(name: string, ms: number): (e: unknown) => void {
    let failed = 0;
    let loggedAt = 0;
    return (e: unknown) => {
      failed++;
      if (Date.now() - loggedAt >= Math.max(ms, FAILURE_LOG_EVERY_MS) || loggedAt === 0) {
        this.log.warn({ task: name, err: (e as Error).message, failures: failed }, 'maintenance pass failed');
        loggedAt = Date.now();
        failed = 0;
      }
    };
  }
}

/** PostgreSQL's lock_not_available (55P03): a DDL step that gave way to the writers. */
function lockWait(e: unknown): boolean {
  const err = e as { code?: string; driverError?: { code?: string } };
  return (err.driverError?.code ?? err.code) === '55P03';
}
