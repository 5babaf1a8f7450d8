import { IdempotencyConflictError } from '../core/errors';
import type { NormalizedEnqueue } from '../core/job-options';
import type { Clock } from '../core/ports';
import { CronSlots, dueSlot } from '../core/schedule-slots';
import { slotJob } from './schedule-definition';
import type { ScheduleRepository, ScheduleRow } from './schedule-repository';

/** What the materializer logs through (a pino logger fits). */
export interface MaterializerLog {
  info(obj: object, msg: string): void;
  warn(obj: object, msg: string): void;
  debug(obj: object, msg: string): void;
}

export interface MaterializerOptions {
  repo: ScheduleRepository;
  /** Enqueues one job (JobStore.enqueue); may throw IdempotencyConflictError. */
  enqueue: (job: NormalizedEnqueue) => Promise<{ id: string }>;
  clock: Clock;
  log: MaterializerLog;
  /**
   * Lease of a claimed slot, ms: after it, another replica may retry the
   * enqueue. Keep it below IDEMPOTENCY_TTL_MS, so that the retry still
   * meets the slot's idempotency key if the first enqueue did happen.
   */
  leaseMs: number;
  /** Period of the full reload from PostgreSQL (pub/sub notices come in between), ms. */
  refreshMs?: number;
  /** Delay before a failed enqueue (Redis down, load shedding) is retried, ms. */
  retryMs?: number;
  /** Observer (metrics): a slot fired, its job enqueued on `queue` and confirmed; must not throw. */
  onFired?: (queue: string) => void;
}

interface Cached {
  row: ScheduleRow;
  slots: CronSlots;
}

/**
 * The cron materializer of the `scheduler` role: turns due slots of the
 * enabled schedules into jobs.
 *
 * Per (schedule, slot), at most once across any number of replicas:
 * 1. claim the slot in PostgreSQL with a compare-and-set UPDATE (the row
 *    must still exist, be enabled, unchanged and due; `last_slot` only
 *    grows), which also moves `next_run_at` to the next slot after now;
 * 2. enqueue the job with idempotency key `schedule:<id>:<slot ISO>`
 *    (enforced by the enqueue script: a retry within IDEMPOTENCY_TTL_MS
 *    replays instead of adding a job);
 * 3. confirm (clears the claim's lease, records lastRunAt and the job id).
 * A replica that dies between 1 and 3, or whose enqueue fails, leaves the
 * lease to expire; then any replica retries step 2 for that same slot, unless
 * a newer slot is due by then (older missed slots are skipped).
 *
 * The cache only decides when to wake: every claim re-checks the row, so a
 * deleted, disabled or edited schedule cannot fire from a stale copy.
 * Time comes from the injected Clock; the timer is only a wake-up call and a
 * timer that fires early fires nothing (the due check uses clock.now()).
 */
export class ScheduleMaterializer {
  private cache = new Map<string, Cached>();
  private timer?: NodeJS.Timeout;
  private stopped = true;
  private running = false;
  private rerun = false;
  private dirty = true;
  private lastRefresh = -Infinity;
  private readonly refreshMs: number;
  private readonly retryMs: number;

  constructor(private readonly o: MaterializerOptions) {
    this.refreshMs = o.refreshMs ?? 5000;
    this.retryMs = o.retryMs ?? 1000;
  }

  /** Starts the timer loop (first pass at once). */
  start(): void {
    this.stopped = false;
    this.arm(0);
  }

  /** Stops the loop and waits for a pass in progress. */
  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    while (this.running) await new Promise((r) => setTimeout(r, 5));
  }

  /** A schedule changed (pub/sub notice): reload before the next pass, which runs now. */
  changed(): void {
    this.dirty = true;
    if (!this.stopped) this.arm(0);
  }

  /** Reloads the enabled schedules from PostgreSQL. */
  async refresh(): Promise<void> {
    const rows = await this.o.repo.listEnabled();
    const next = new Map<string, Cached>();
    for (const row of rows) {
      const old = this.cache.get(row.id);
      if (old && old.row.cron === row.cron && old.row.timezone === row.timezone) {
        next.set(row.id, { row, slots: old.slots });
        continue;
      }
      try {
        next.set(row.id, { row, slots: CronSlots.compile(row) });
      } catch (e) {
        // Validated on write; a row edited by hand must not stop the others.
        this.o.log.warn({ scheduleId: row.id, err: (e as Error).message }, 'schedule skipped: invalid cron or time zone');
      }
    }
    this.cache = next;
    this.dirty = false;
    this.lastRefresh = this.o.clock.now();
  }

  /**
   * One pass at clock.now(): fires every due slot (and retries expired
   * claims), reloading first when a change was announced or a claim found
   * the cached copy outdated.
   * @returns the number of jobs enqueued (replays included).
   */
  async tick(): Promise<number> {
    if (this.dirty) await this.refresh();
    let fired = 0;
    for (const c of [...this.cache.values()]) fired += await this.evaluate(c);
    if (this.dirty) {
      // A claim saw a newer revision: the edited schedule may be due now.
      await this.refresh();
      for (const c of [...this.cache.values()]) fired += await this.evaluate(c);
    }
    return fired;
  }

  /** Ids and next slots of the cached schedules (for tests and logs). */
  snapshot(): { id: string; nextRunAt: number | null }[] {
    return [...this.cache.values()].map((c) => ({ id: c.row.id, nextRunAt: c.row.nextRunAt }));
  }

  private async evaluate(c: Cached): Promise<number> {
    const row = c.row;
    const now = this.o.clock.now();
    if (row.nextRunAt !== null && row.nextRunAt <= now) {
      const { due, next } = dueSlot(c.slots, row.nextRunAt, now);
      if (due === null) {
        this.dirty = true;
        return 0;
      }
      const outcome = await this.o.repo.claimSlot(row.id, row.revision, due, next, now + this.o.leaseMs);
      if (outcome === 'stale') {
        this.dirty = true;
        return 0;
      }
      row.nextRunAt = next;
      if (outcome === 'lost') return 0; // another replica fires it
      row.lastSlot = due;
      row.claimUntil = now + this.o.leaseMs;
      if (due < now - 1000) this.o.log.info({ scheduleId: row.id, slot: new Date(due).toISOString() }, 'schedule catching up: firing the newest missed slot once');
      return this.fire(row, due);
    }
    if (row.claimUntil !== null && row.claimUntil <= now && row.lastSlot !== null) {
      if (!(await this.o.repo.retakeClaim(row.id, row.revision, row.lastSlot, now, now + this.o.leaseMs))) {
        this.dirty = true; // confirmed or taken by another replica meanwhile
        return 0;
      }
      this.o.log.info({ scheduleId: row.id, slot: new Date(row.lastSlot).toISOString() }, 'retrying the enqueue of an unconfirmed schedule slot');
      row.claimUntil = now + this.o.leaseMs;
      return this.fire(row, row.lastSlot);
    }
    return 0;
  }

  /** Step 2 and 3: enqueue the slot's job, then confirm; on failure, release the claim for a retry. */
  private async fire(row: ScheduleRow, slot: number): Promise<number> {
    let jobId: string | null = null;
    try {
      jobId = (await this.o.enqueue(slotJob(row, slot))).id;
    } catch (e) {
      if (!(e instanceof IdempotencyConflictError)) {
        // Redis down or load shedding: nothing (or, on a lost reply, a job
        // its idempotency key protects) was written. Retry the same slot.
        const retryAt = this.o.clock.now() + this.retryMs;
        row.claimUntil = retryAt;
        this.o.log.warn({ scheduleId: row.id, slot: new Date(slot).toISOString(), err: (e as Error).message }, 'schedule slot not enqueued; will retry');
        await this.o.repo.releaseClaim(row.id, slot, retryAt).catch(() => undefined);
        return 0;
      }
      // The slot's key holds a job with another body (the schedule was
      // edited between two attempts): the slot has fired.
    }
    await this.o.repo.confirmSlot(row.id, slot, jobId, this.o.clock.now());
    row.claimUntil = null;
    this.o.onFired?.(row.queue);
    this.o.log.debug({ scheduleId: row.id, slot: new Date(slot).toISOString(), jobId }, 'schedule slot enqueued');
    return 1;
  }

  /** Earliest instant anything cached needs attention, capped by the refresh period. */
  private nextWake(): number {
    let wake = this.lastRefresh + this.refreshMs;
    for (const { row } of this.cache.values()) {
      if (row.nextRunAt !== null) wake = Math.min(wake, row.nextRunAt);
      if (row.claimUntil !== null) wake = Math.min(wake, row.claimUntil);
    }
    return wake;
  }

  private arm(delayMs: number): void {
    if (this.stopped) return;
    if (this.running) {
      this.rerun = true;
      return;
    }
    clearTimeout(this.timer);
    this.timer = setTimeout(() => void this.loop(), Math.max(0, Math.min(delayMs, this.refreshMs)));
    this.timer.unref?.();
  }

  private async loop(): Promise<void> {
    if (this.stopped) return;
    this.running = true;
    let failed = false;
    try {
      if (this.o.clock.now() - this.lastRefresh >= this.refreshMs) this.dirty = true;
      await this.tick();
    } catch (e) {
      // PostgreSQL unreachable, typically: try again shortly, from a fresh load.
      this.o.log.warn({ err: (e as Error).message }, 'schedule pass failed');
      this.dirty = true;
      failed = true;
    } finally {
      this.running = false;
    }
    const rerun = this.rerun && !failed;
    this.rerun = false;
    // Aim at the next slot; never less than 1 ms so an early wake-up cannot spin.
    this.arm(failed ? this.retryMs : rerun ? 0 : Math.max(1, this.nextWake() - this.o.clock.now()));
  }
}
