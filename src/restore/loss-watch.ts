import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import type { DataSource } from 'typeorm';
import type { StoreConnection } from '../core/ports';
import { silentLogger as silent, type Logger } from '../core/logger';
import { compareIds } from '../core/stream-ids';
import { sleep } from '../core/sleep';
import type { QueueRestorer, QueueRestoreReport, RestoreStores } from './restore';

/**
 * The restore watch (API.md v1.2 "Redis loss at run time", CASES C27): notices
 * while Sluice runs that Redis came back empty or rewound (a restart without
 * persistence, a failover to a stale replica, an older snapshot, FLUSHALL)
 * and rebuilds what it lost from PostgreSQL, without a restart. Run by the
 * audit role (it has PostgreSQL and mirrors the streams), at each reconnect
 * and every `intervalMs`.
 *
 * Per queue (PostgreSQL read first, then Redis: a healthy Redis is never
 * behind what PostgreSQL holds, since the mirror writes only entries Redis
 * handed it):
 * - **empty**: no epoch marker while PostgreSQL knows the queue → the restore
 *   of src/restore/restore.ts (under the queue's mirror lock; the script
 *   refuses once the marker is back, so one replica restores).
 * - **rewound**: the marker is there but the mirror's consumer group was
 *   handed less than PostgreSQL holds → the marker is dropped if it is still
 *   the one seen and the queue's mirror lock passes to the watch (one
 *   replica wins: lua/resetQueue-3.lua); under that lock every job in Redis
 *   that PostgreSQL knows is removed (PostgreSQL's state is newer) and the
 *   queue is restored (src/restore/restore.ts; a restore interrupted there
 *   is finished, prune included, by whoever restores the queue next): jobs PostgreSQL knows as finished never come
 *   back, jobs newer than the snapshot do; jobs PostgreSQL never heard of
 *   (accepted after Redis came back) stay. Once every rewound queue is
 *   restored and checked, the flows with unfinished jobs in each release what
 *   their records free (QueueRestorer.releaseFlows: the fence refused those
 *   moves before, and jobs of other queues pruned later add their outcomes).
 * - otherwise the queue is marked checked on this Redis server (its run id),
 *   which lifts the restore fence (lua/includes/fence.lua): after any Redis
 *   restart a checked queue claims, promotes and reaps nothing until the
 *   watch checked it again, so a snapshot's finished jobs never run again.
 *
 * While it rebuilds, `/readyz` of every process answers 503 `restoring`
 * (RestoreStore.setRestoring); each rebuild is logged once at warn and
 * counted (`onRebuild`).
 */

/** One rebuild: what was found and what came back. */
export interface RebuildReport {
  /** Queues whose marker was missing (Redis empty or the queue lost). */
  lost: string[];
  /** Queues Redis held from an older state than PostgreSQL's. */
  rewound: string[];
  /** Jobs of rewound queues removed because PostgreSQL knew a newer state. */
  pruned: number;
  /** The restore reports of the queues rebuilt. */
  reports: QueueRestoreReport[];
  /** Jobs brought back (waiting, delayed, active, blocked, failed, cancelled). */
  jobs: number;
  ms: number;
}

/** What a registries step gave back: counts by kind (keys, projects, queue settings…). */
export type RegistriesReport = Record<string, number>;

export interface LossWatchOptions {
  /** Period of the check, ms (each reconnect also triggers one). */
  intervalMs: number;
  /**
   * Gives back to Redis what it holds beside the queues' jobs and PostgreSQL
   * keeps (API keys, projects, queue settings and key overrides): run when
   * the installation marker is gone, before any queue's jobs come back (an
   * external queue is external again before its jobs can be claimed).
   * @throws when PostgreSQL or Redis fail (the marker stays unset: the next pass runs it again).
   */
  registries?: () => Promise<RegistriesReport>;
  /** Run at each pass: copies queue settings changed while PostgreSQL was away (SettingsKeeper.saveUnsaved). */
  eachPass?: () => Promise<unknown>;
  log?: Logger;
  /** Called after each rebuild (metrics). */
  onRebuild?: (r: RebuildReport) => void;
}

/** The mirror lock's lease while the watch resets and restores a queue, ms (renewed by each chunk). */
const RESTORE_LOCK_TTL_MS = 30_000;
/** How long the `restoring` flag lives unless renewed, ms (a watch that dies mid-rebuild does not leave it up). */
const RESTORING_TTL_MS = 60_000;
/**
 * How long `restoring` stays up after the registries came back, ms: an api
 * process may have cached a key's absence just before (src/auth/key-store.ts
 * KEY_CACHE_MS, 1 s); once `/readyz` says ok, every valid key works.
 */
export const REGISTRIES_SETTLE_MS = 1_250;

export class RedisLossWatch {
  private timer?: NodeJS.Timeout;
  private offReady?: () => void;
  private running: Promise<RebuildReport | null> | null = null;
  private again = false;
  private stopped = true;
  private readonly log: Logger;

  constructor(
    private readonly db: DataSource,
    private readonly stores: RestoreStores & { connection: StoreConnection },
    private readonly restorer: QueueRestorer,
    private readonly opts: LossWatchOptions,
  ) {
    this.log = opts.log ?? silent;
  }

  start(): void {
    this.stopped = false;
    this.offReady = this.stores.connection.onReady(() => this.trigger());
    const tick = () => {
      this.trigger();
      this.timer = setTimeout(tick, this.opts.intervalMs);
      this.timer.unref?.();
    };
    this.timer = setTimeout(tick, this.opts.intervalMs);
    this.timer.unref?.();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    this.offReady?.();
    await this.running?.catch(() => undefined);
  }

  /** Runs a check now, or once more after the one in progress. */
  private trigger(): void {
    if (this.stopped) return;
    if (this.running) {
      this.again = true;
      return;
    }
    this.running = this.check()
      .catch((e) => {
        this.log.debug({ err: (e as Error).message }, 'redis loss check failed, trying again');
        return null;
      })
      .finally(() => {
        this.running = null;
        if (this.again) {
          this.again = false;
          this.trigger();
        }
      });
  }

  /** Token of this watch's locks and of its `restoring` flag. */
  private readonly id = `watch-${hostname()}-${process.pid}-${randomBytes(4).toString('hex')}`;
  /** Queues whose check failed in the last pass (a failure is logged at warn once until the queue recovers). */
  private failing = new Set<string>();

  /**
   * One pass over every queue Redis or PostgreSQL knows (see the file
   * comment); a queue whose check fails is logged and the others go on.
   * @returns the rebuild done, or null when nothing was lost.
   * @throws when the queues cannot be listed (the next pass tries again).
   */
  async check(): Promise<RebuildReport | null> {
    if (!this.stores.connection.isReady()) return null;
    // Redis lost what it held: the registries first, `restoring` held until the queues are back too.
    const lost = !(await this.stores.restore.state()).installed;
    if (lost) await this.restoreRegistries({ settle: true, hold: true });
    try {
      return await this.checkQueues();
    } finally {
      if (lost) await this.stores.restore.setRestoring(this.id, false).catch(() => undefined);
    }
  }

  /** The queues' part of {@link check}. */
  private async checkQueues(): Promise<RebuildReport | null> {
    await this.opts.eachPass?.().catch((e: Error) => this.log.debug({ err: e.message }, 'restore watch: per-pass step failed'));
    const lost: string[] = [];
    const rewound: { queue: string; epoch: string }[] = [];
    const queues = await this.restorer.listQueues();
    // PostgreSQL first (one query for every queue), then Redis (the queues' checks
    // in one auto-pipelined round): a healthy Redis is never behind what was read.
    const pgMax = await this.newestMirroredAll(queues);
    await Promise.all(
      queues.map((queue) =>
        this.guard(queue, async () => {
          const top = pgMax.get(queue) ?? null;
          const s = await this.stores.restore.inspect(queue);
          if (s.epoch === null) lost.push(queue);
          else if (top !== null && (s.lastDelivered === null || compareIds(s.lastDelivered, top) < 0)) rewound.push({ queue, epoch: s.epoch });
          // Not behind PostgreSQL: nothing to raise; refused if the server changed since inspect.
          else if (s.checkedOn !== s.runId) await this.stores.restore.verify(queue, s.epoch, null, s.runId);
        }),
      ),
    );
    lost.sort();
    rewound.sort((a, b) => (a.queue < b.queue ? -1 : 1));
    if (!rewound.length && !lost.length) return null;
    return this.rebuild(lost, rewound);
  }

  /**
   * Gives back the registries (options.registries) and sets the installation
   * marker, with `/readyz` at `restoring` meanwhile and for
   * {@link REGISTRIES_SETTLE_MS} after. Also run by the audit role at start.
   * @throws when the registries step fails (logged; the marker stays unset).
   */
  async restoreRegistries(opts: { settle?: boolean; hold?: boolean } = {}): Promise<RegistriesReport> {
    const started = Date.now();
    await this.stores.restore.setRestoring(this.id, true, RESTORING_TTL_MS);
    let ok = false;
    try {
      const report = (await this.opts.registries?.()) ?? {};
      await this.stores.restore.markInstalled();
      const ms = Date.now() - started;
      const what = Object.entries(report).map(([k, v]) => `${v} ${k}`).join(', ') || 'nothing';
      this.log.warn({ ...report, ms }, `redis held no installation marker: registries given back from postgres (${what})`);
      if (opts.settle) await sleep(REGISTRIES_SETTLE_MS);
      ok = true;
      return report;
    } catch (e) {
      this.log.warn({ err: (e as Error).message }, 'redis registries not given back yet: tried again at the next check');
      throw e;
    } finally {
      if (!ok || !opts.hold) await this.stores.restore.setRestoring(this.id, false).catch(() => undefined);
    }
  }

  /** Runs one queue's step; a failure is logged (warn once per queue until it recovers) and swallowed. */
  private async guard(queue: string, step: () => Promise<void>): Promise<void> {
    try {
      await step();
      this.failing.delete(queue);
    } catch (e) {
      if (!this.failing.has(queue)) this.log.warn({ queue, err: (e as Error).message }, 'redis loss check of a queue failed: trying again at the next pass');
      this.failing.add(queue);
    }
  }

  private async rebuild(lost: string[], rewound: { queue: string; epoch: string }[]): Promise<RebuildReport | null> {
    const started = Date.now();
    let flagged = false;
    const flag = async () => {
      // Renewed per queue: a long rebuild keeps /readyz at `restoring`.
      await this.stores.restore.setRestoring(this.id, true, RESTORING_TTL_MS).catch(() => undefined);
      flagged = true;
    };
    const reports: QueueRestoreReport[] = [];
    const rewoundNames: string[] = [];
    try {
      for (const { queue, epoch } of rewound) {
        await this.guard(queue, async () => {
          await flag();
          const lock = { token: this.id, ttlMs: RESTORE_LOCK_TTL_MS };
          if (await this.stores.restore.reset(queue, epoch, lock)) {
            rewoundNames.push(queue);
            // Pruned and restored under the lock reset handed over (src/restore/restore.ts).
            try {
              reports.push(await this.restoreAndVerify(queue, this.id));
            } finally {
              await this.stores.ownership.release(queue, this.id).catch(() => undefined);
            }
          } else lost.push(queue); // another replica reset it: restore (or find it restored)
        });
      }
      for (const queue of lost) {
        await this.guard(queue, async () => {
          if (!flagged && (await this.knownToPostgres(queue))) await flag();
          else if (flagged) await flag();
          reports.push(await this.restoreAndVerify(queue));
        });
      }
      // The rewound queues are checked now, and every snapshot copy pruned: the
      // flow moves their fence refused, with the outcomes of jobs pruned from
      // other queues after their own pass (QueueRestorer.releaseFlows, idempotent).
      for (const r of reports.filter((x) => x.action === 'restored' && rewoundNames.includes(x.queue))) {
        await this.guard(r.queue, async () => {
          const f = await this.restorer.releaseFlows(r.queue);
          if (f.flows) r.flows = { ...f, released: f.released + (r.flows?.released ?? 0), cancelled: f.cancelled + (r.flows?.cancelled ?? 0) };
        });
      }
    } finally {
      if (flagged) await this.stores.restore.setRestoring(this.id, false).catch(() => undefined);
    }
    const restored = reports.filter((r) => r.action === 'restored');
    if (!restored.length && !rewoundNames.length) return null;
    const pruned = restored.reduce((n, r) => n + (r.pruned ?? 0), 0);
    const jobs = restored.reduce((n, r) => n + r.counts.waiting + r.counts.delayed + r.counts.active + r.counts.blocked + r.counts.failed + r.counts.cancelled, 0);
    const report: RebuildReport = {
      lost: restored.map((r) => r.queue).filter((q) => !rewoundNames.includes(q)),
      rewound: rewoundNames,
      pruned,
      reports: restored,
      jobs,
      ms: Date.now() - started,
    };
    const sum = (k: 'waiting' | 'delayed' | 'active' | 'blocked' | 'failed' | 'cancelled') => restored.reduce((n, r) => n + r.counts[k], 0);
    const released = restored.reduce((n, r) => n + (r.flows?.released ?? 0), 0);
    this.log.warn(
      { lost: report.lost, rewound: report.rewound, pruned, jobs, waiting: sum('waiting'), delayed: sum('delayed'), active: sum('active'), blocked: sum('blocked'), failed: sum('failed'), cancelled: sum('cancelled'), flowsReleased: released, ms: report.ms },
      `redis lost state while running (${report.lost.length} queues empty, ${report.rewound.length} rewound): rebuilt ${restored.length} queues from postgres, ${jobs} jobs back` +
        ` (${sum('waiting')} waiting, ${sum('delayed')} delayed, ${sum('active')} active back to waiting, ${sum('blocked')} blocked, ${sum('failed')} in the DLQ; ${released} flow dependents released), ${pruned} stale jobs dropped`,
    );
    this.opts.onRebuild?.(report);
    return report;
  }

  /**
   * Restores a queue without a marker (pruning first when it was reset) and
   * marks it checked on the server it was restored on.
   * @param lockToken the queue's mirror lock is held with it (after a reset).
   */
  private async restoreAndVerify(queue: string, lockToken?: string): Promise<QueueRestoreReport> {
    const { runId } = await this.stores.restore.inspect(queue);
    const r = await this.restorer.ensureQueue(queue, { lockToken });
    if (r.epoch) await this.stores.restore.verify(queue, r.epoch, await this.newestMirrored(queue), runId);
    return r;
  }

  private async knownToPostgres(queue: string): Promise<boolean> {
    const [{ known }] = (await this.db.query(
      `SELECT EXISTS (SELECT 1 FROM jobs WHERE queue = $1 AND status IN ('waiting', 'delayed', 'active', 'blocked'))
           OR EXISTS (SELECT 1 FROM dead_letter_jobs WHERE queue = $1) AS known`,
      [queue],
    )) as { known: boolean }[];
    return known;
  }

  /** The newest stream id ("ms-seq") PostgreSQL holds for each queue's entries (absent: none): `queue_stream_tops`, which the mirror writer keeps. */
  private async newestMirroredAll(queues: string[]): Promise<Map<string, string>> {
    if (!queues.length) return new Map();
    const rows = (await this.db.query(
      `SELECT queue AS name, stream_ms::text AS m, stream_seq::text AS s FROM queue_stream_tops WHERE queue = ANY($1::text[])`,
      [queues],
    )) as { name: string; m: string; s: string }[];
    return new Map(rows.map((r) => [r.name, `${r.m}-${r.s}`]));
  }

  /** The newest stream id ("ms-seq") PostgreSQL holds for the queue's events, or null. */
  private async newestMirrored(queue: string): Promise<string | null> {
    const [top] = (await this.db.query(
      `SELECT stream_ms::text AS m, stream_seq::text AS s FROM queue_stream_tops WHERE queue = $1`,
      [queue],
    )) as { m: string; s: string }[];
    return top ? `${top.m}-${top.s}` : null;
  }
}
