import { Cron } from 'croner';
import { ValidationError } from './errors';
import { firstInstantOfWall, isValidTimeZone, repeatedSpanEnd, wallAt } from './schedule-zone';

/**
 * Slot semantics of API.md "Schedules (cron)", on top of croner.
 *
 * croner parses the expression and finds the next/previous matching wall
 * time; it runs in UTC (`utcOffset: 0`), where no time is skipped or
 * repeated, so it only ever sees wall times (schedule-zone.ts). Our code maps
 * each matching wall time to the instant it fires:
 * - a wall time in a spring-forward gap fires at the first valid instant
 *   after it (02:30 on 2024-03-10 in New York fires at 03:00 EDT);
 * - a wall time that occurs twice fires only at its first occurrence
 *   (01:30 on 2024-11-03 in New York fires at 01:30 EDT, not again at EST);
 * - wall times that map to the same instant make one slot (in a gap, a
 *   per-minute schedule fires once at the transition, not 60 times).
 * The same rules hold for every expression: croner's own DST handling
 * (fixed-time vs interval jobs, `fixedTimeRule`) would run a `*\/15` job twice
 * through the repeated hour, which API.md forbids. Closest prior art: ISC
 * (Vixie) cron's handling of fixed-time jobs, applied to all jobs.
 *
 * A slot is identified by its instant (epoch ms, whole seconds).
 * Nothing here depends on the process `TZ`.
 */

/** Field count of a 5-field (minute precision) or 6-field (leading seconds) expression. */
const FIELD_COUNTS = [5, 6];

export interface ScheduleSpec {
  cron: string;
  /** IANA zone name, e.g. "America/New_York". */
  timezone: string;
}

/** A compiled schedule: cron + zone. Immutable; cheap to keep per schedule. */
export class CronSlots {
  private constructor(
    readonly cron: string,
    readonly timezone: string,
    private readonly matcher: Cron,
  ) {}

  /**
   * Compiles and validates a cron expression and time zone.
   * @throws ValidationError with details `{path: 'cron' | 'timezone', message}`
   *   (both listed when both are bad); the path names are prefixed with
   *   `pathPrefix`. A cron that never matches (`0 0 31 2 *`) is refused too.
   */
  static compile(spec: ScheduleSpec, pathPrefix = ''): CronSlots {
    const details: { path: string; message: string }[] = [];
    let matcher: Cron | undefined;
    const cron = typeof spec.cron === 'string' ? spec.cron.trim() : '';
    const fields = cron.split(/\s+/).filter(Boolean).length;
    if (typeof spec.cron !== 'string' || !FIELD_COUNTS.includes(fields)) {
      details.push({ path: pathPrefix + 'cron', message: 'must be a cron expression of 5 or 6 space-separated fields' });
    } else {
      try {
        matcher = new Cron(cron, { utcOffset: 0, paused: true, mode: '5-or-6-parts' });
        if (matcher.nextRun(new Date(0)) === null) throw new Error('it never matches a date');
      } catch (e) {
        details.push({ path: pathPrefix + 'cron', message: `invalid cron expression: ${(e as Error).message.replace(/^CronPattern: /, '')}` });
      }
    }
    if (!isValidTimeZone(spec.timezone)) {
      details.push({ path: pathPrefix + 'timezone', message: 'must be an IANA time zone name such as "UTC" or "Europe/Berlin"' });
    }
    if (details.length || !matcher) throw new ValidationError('invalid schedule', details);
    return new CronSlots(cron, spec.timezone, matcher);
  }

  /**
   * The first slot strictly after instant `t` (epoch ms), or null when the
   * expression has no later match (croner stops at year 3000 or so).
   */
  nextAfter(t: number): number | null {
    let from = wallAt(this.timezone, t);
    // In the second pass of a repeated hour, every wall time up to the end of
    // the span already fired at its first occurrence.
    const spanEnd = repeatedSpanEnd(this.timezone, t);
    if (spanEnd !== null) from = Math.max(from, spanEnd - 1);
    for (let guard = 0; guard < 10_000; guard++) {
      const wall = this.matcher.nextRun(new Date(from));
      if (!wall) return null;
      const at = firstInstantOfWall(this.timezone, wall.getTime());
      // Invariant: slots are strictly increasing; equal instants are one slot.
      if (at > t) return at;
      from = wall.getTime();
    }
    throw new Error(`cron "${this.cron}" in ${this.timezone}: no slot found after ${new Date(t).toISOString()}`);
  }

  /**
   * The latest slot at or before instant `t` (epoch ms), or null when there
   * is none (never before year 0).
   */
  latestAtOrBefore(t: number): number | null {
    // A wall time at or before wall(t) has already happened (or was skipped
    // over in a gap), so it maps to an instant <= t ...
    const candidates: number[] = [];
    const own = this.previousWall(wallAt(this.timezone, t) + 1);
    if (own !== null) candidates.push(own);
    // ... and in the second pass of a repeated hour, so does every wall time
    // of the span: its first occurrence is behind us.
    const spanEnd = repeatedSpanEnd(this.timezone, t);
    if (spanEnd !== null) {
      const inSpan = this.previousWall(spanEnd);
      if (inSpan !== null) candidates.push(inSpan);
    }
    if (!candidates.length) return null;
    return firstInstantOfWall(this.timezone, Math.max(...candidates));
  }

  /**
   * The first `count` slots at or after instant `from` (epoch ms), ascending.
   * Fewer when the expression runs out of matches.
   */
  preview(from: number, count: number): number[] {
    const out: number[] = [];
    let t = from - 1;
    while (out.length < count) {
      const next = this.nextAfter(t);
      if (next === null) break;
      out.push(next);
      t = next;
    }
    return out;
  }

  /** Latest matching wall time strictly before wall time `ref`, whole seconds. */
  private previousWall(ref: number): number | null {
    // croner counts a match earlier in the reference's own second as previous.
    const r = this.matcher.previousRuns(1, new Date(ref));
    return r.length ? r[0].getTime() : null;
  }
}

/**
 * The missed-run rule of API.md: given the schedule's stored `nextRunAt`
 * (the first slot not yet fired, epoch ms) and `now`, returns the slot to
 * fire now (the latest slot at or before `now`: a schedule that missed
 * several slots while no scheduler ran fires once, for the newest, and the
 * older ones are skipped) and the next slot to wait for, computed from `now`
 * (never by stepping from a stale `nextRunAt`).
 * `due` is null when `nextRunAt` is still in the future: a timer that fired a
 * few ms early fires nothing.
 */
export function dueSlot(slots: CronSlots, nextRunAt: number, now: number): { due: number | null; next: number | null } {
  if (now < nextRunAt) return { due: null, next: nextRunAt };
  const latest = slots.latestAtOrBefore(now);
  // nextRunAt is a slot of this expression, so latest >= nextRunAt; if it is
  // not (computed from an older expression), nothing fell due since.
  return { due: latest !== null && latest >= nextRunAt ? latest : null, next: slots.nextAfter(now) };
}
