import type { DataSource } from 'typeorm';
import type { StoreConnection } from '../core/ports';
import { silentLogger as silent, type Logger } from '../core/logger';
import { compareIds } from '../core/stream-ids';
import { QueueRestorer, type QueueRestoreReport, type RestoreStores } from './restore';

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
 *   the one seen (one replica wins: lua/resetQueue-2.lua), every job in
 *   Redis that PostgreSQL knows is removed (PostgreSQL's state is newer),
 *   and the queue is restored: jobs PostgreSQL knows as finished never come
 *   back, jobs newer than the snapshot do; jobs PostgreSQL never heard of
 *   (accepted after Redis came back) stay.
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
  /** Jobs brought back (waiting, delayed, active, failed, cancelled). */
  jobs: number;
  ms: number;
}

export interface LossWatchOptions {
  /** Period of the check, ms (each reconnect also triggers one). */
  intervalMs: number;
  log?: Logger;
  /** Called after each rebuild (metrics). */
  onRebuild?: (r: RebuildReport) => void;
}

/** Ids per PostgreSQL lookup and per prune call. */
const CHUNK = 1000;
/** How long the `restoring` flag lives unless renewed, ms (a watch that dies mid-rebuild does not leave it up). */
const RESTORING_TTL_MS = 60_000;

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

  /**
   * One pass over every queue Redis or PostgreSQL knows (see the file
   * comment). @returns the rebuild done, or null when nothing was lost.
   * @throws when Redis or PostgreSQL fail (the next pass tries again).
   */
  async check(): Promise<RebuildReport | null> {
    if (!this.stores.connection.isReady()) return null;
    const lost: string[] = [];
    const rewound: { queue: string; epoch: string }[] = [];
    for (const queue of await this.restorer.listQueues()) {
      const pgMax = await this.newestMirrored(queue);
      const s = await this.stores.restore.inspect(queue);
      if (s.epoch === null) lost.push(queue);
      else if (pgMax !== null && (s.lastDelivered === null || compareIds(s.lastDelivered, pgMax) < 0)) rewound.push({ queue, epoch: s.epoch });
      else if (s.checkedOn !== s.runId) await this.stores.restore.verify(queue, s.epoch, pgMax);
    }
    if (!rewound.length && !lost.length) return null;
    return this.rebuild(lost, rewound);
  }

  private async rebuild(lost: string[], rewound: { queue: string; epoch: string }[]): Promise<RebuildReport | null> {
    const started = Date.now();
    let flagged = false;
    let pruned = 0;
    const reports: QueueRestoreReport[] = [];
    const rewoundNames: string[] = [];
    try {
      for (const { queue, epoch } of rewound) {
        if (!flagged) flagged = await this.flag();
        if (await this.stores.restore.reset(queue, epoch)) {
          rewoundNames.push(queue);
          pruned += await this.pruneKnown(queue);
        }
        lost.push(queue);
      }
      for (const queue of lost) {
        if (!flagged && (await this.knownToPostgres(queue))) flagged = await this.flag();
        const r = await this.restorer.ensureQueue(queue);
        reports.push(r);
        if (r.epoch) await this.stores.restore.verify(queue, r.epoch, await this.newestMirrored(queue));
      }
    } finally {
      if (flagged) await this.stores.restore.setRestoring(false).catch(() => undefined);
    }
    const restored = reports.filter((r) => r.action === 'restored');
    if (!restored.length && !rewoundNames.length) return null;
    const jobs = restored.reduce((n, r) => n + r.counts.waiting + r.counts.delayed + r.counts.active + r.counts.failed + r.counts.cancelled, 0);
    const report: RebuildReport = { lost: lost.filter((q) => !rewoundNames.includes(q) && restored.some((r) => r.queue === q)), rewound: rewoundNames, pruned, reports: restored, jobs, ms: Date.now() - started };
    const sum = (k: 'waiting' | 'delayed' | 'active' | 'failed' | 'cancelled') => restored.reduce((n, r) => n + r.counts[k], 0);
    this.log.warn(
      { lost: report.lost, rewound: report.rewound, pruned, jobs, waiting: sum('waiting'), delayed: sum('delayed'), active: sum('active'), failed: sum('failed'), cancelled: sum('cancelled'), ms: report.ms },
      `redis lost state while running (${report.lost.length} queues empty, ${report.rewound.length} rewound): rebuilt ${restored.length} queues from postgres, ${jobs} jobs back` +
        ` (${sum('waiting')} waiting, ${sum('delayed')} delayed, ${sum('active')} active back to waiting, ${sum('failed')} in the DLQ), ${pruned} stale jobs dropped`,
    );
    this.opts.onRebuild?.(report);
    return report;
  }

  /** Raises the `restoring` flag; true once raised (a failure to raise it does not stop the rebuild). */
  private async flag(): Promise<boolean> {
    await this.stores.restore.setRestoring(true, RESTORING_TTL_MS).catch(() => undefined);
    return true;
  }

  /** Removes from a reset queue every job PostgreSQL knows (its state there is newer). @returns hashes removed. */
  private async pruneKnown(queue: string): Promise<number> {
    const ids = await this.stores.restore.jobIds(queue);
    let n = 0;
    for (let i = 0; i < ids.length; i += CHUNK) {
      const chunk = ids.slice(i, i + CHUNK);
      const known = (await this.db.query(
        `SELECT id::text AS id FROM jobs WHERE id = ANY($1::uuid[]) UNION SELECT job_id::text FROM dead_letter_jobs WHERE job_id = ANY($1::uuid[])`,
        [chunk.filter((id) => UUID.test(id))],
      )) as { id: string }[];
      if (!known.length) continue;
      const removed = await this.stores.restore.prune(queue, known.map((r) => r.id));
      if (removed < 0) break; // restored meanwhile by another process
      n += removed;
    }
    return n;
  }

  private async knownToPostgres(queue: string): Promise<boolean> {
    const [{ known }] = (await this.db.query(
      `SELECT EXISTS (SELECT 1 FROM jobs WHERE queue = $1 AND status IN ('waiting', 'delayed', 'active'))
           OR EXISTS (SELECT 1 FROM dead_letter_jobs WHERE queue = $1) AS known`,
      [queue],
    )) as { known: boolean }[];
    return known;
  }

  /** The newest stream id ("ms-seq") PostgreSQL holds for the queue's events, or null. */
  private async newestMirrored(queue: string): Promise<string | null> {
    const [top] = (await this.db.query(
      `SELECT stream_ms::text AS m, stream_seq::text AS s FROM job_events WHERE queue = $1 ORDER BY stream_ms DESC, stream_seq DESC LIMIT 1`,
      [queue],
    )) as { m: string; s: string }[];
    return top ? `${top.m}-${top.s}` : null;
  }
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
