/**
 * Wall-clock arithmetic in an IANA time zone, on Intl only: nothing here
 * reads the process `TZ` (no `Date#getHours`, no local-time constructors).
 *
 * A "wall" time is a local date-time encoded as epoch ms as if it were UTC
 * (2024-03-10 02:30 in New York is `Date.UTC(2024, 2, 10, 2, 30)`), so wall
 * times can be compared and fed to a cron matcher running in UTC, where
 * nothing is skipped or repeated.
 */

const HOUR = 3_600_000;
const DAY = 24 * HOUR;
/** Longer than any DST shift in tzdb (the largest is 2 h), shorter than the gap between two transitions. */
const TRANSITION_WINDOW = 6 * HOUR;

const formatters = new Map<string, Intl.DateTimeFormat>();

function formatter(timeZone: string): Intl.DateTimeFormat {
  let f = formatters.get(timeZone);
  if (!f) {
    f = new Intl.DateTimeFormat('en-US', {
      timeZone,
      hourCycle: 'h23',
      era: 'short',
      year: 'numeric',
      month: 'numeric',
      day: 'numeric',
      hour: 'numeric',
      minute: 'numeric',
      second: 'numeric',
    });
    formatters.set(timeZone, f);
  }
  return f;
}

/**
 * True when `timeZone` is an IANA zone name Intl knows (e.g. "Asia/Kolkata", "UTC").
 * Offset strings ("+05:30") and empty strings are refused.
 */
export function isValidTimeZone(timeZone: string): boolean {
  if (typeof timeZone !== 'string' || !/^[A-Za-z][A-Za-z0-9_+\-/]*$/.test(timeZone)) return false;
  try {
    formatter(timeZone);
    return true;
  } catch {
    return false;
  }
}

/** Per zone: hour bucket -> its offset when the same at both ends of the hour, else null. */
const buckets = new Map<string, Map<number, number | null>>();
const MAX_BUCKETS = 50_000;

/**
 * UTC offset of `timeZone` at instant `t` (epoch ms), in ms: wall = t + offset.
 * Intl is slow (tens of µs a call), so whole hours with one offset are
 * cached: an hour whose first and last second share an offset has no
 * transition inside (tzdb never has two within an hour).
 * @throws RangeError for an unknown zone.
 */
export function offsetAt(timeZone: string, t: number): number {
  let zone = buckets.get(timeZone);
  if (!zone || zone.size > MAX_BUCKETS) buckets.set(timeZone, (zone = new Map()));
  const bucket = Math.floor(t / HOUR);
  let cached = zone.get(bucket);
  if (cached === undefined) {
    const first = exactOffsetAt(timeZone, bucket * HOUR);
    cached = first === exactOffsetAt(timeZone, bucket * HOUR + HOUR - 1000) ? first : null;
    zone.set(bucket, cached);
  }
  return cached ?? exactOffsetAt(timeZone, t);
}

function exactOffsetAt(timeZone: string, t: number): number {
  const second = Math.floor(t / 1000) * 1000;
  const p: Record<string, string> = {};
  for (const part of formatter(timeZone).formatToParts(new Date(second))) p[part.type] = part.value;
  let year = Number(p.year);
  if (p.era === 'BC' || p.era === 'B') year = 1 - year;
  const wall = Date.UTC(year, Number(p.month) - 1, Number(p.day), Number(p.hour), Number(p.minute), Number(p.second));
  // Date.UTC maps years 0..99 to 1900..1999.
  const fixed = year >= 0 && year < 100 ? new Date(wall).setUTCFullYear(year) : wall;
  return fixed - second;
}

/** Wall time (see file comment) of instant `t` in `timeZone`; milliseconds are kept. */
export function wallAt(timeZone: string, t: number): number {
  return t + offsetAt(timeZone, t);
}

/**
 * First instant in [lo, hi] (epoch ms) for which `pred` holds, assuming it is
 * false then true across the range (one transition). Returns `hi` if none.
 */
function firstTrue(lo: number, hi: number, pred: (t: number) => boolean): number {
  while (lo < hi) {
    const mid = lo + Math.floor((hi - lo) / 2);
    if (pred(mid)) hi = mid;
    else lo = mid + 1;
  }
  return hi;
}

/**
 * The instant a wall time maps to under the rules of API.md:
 * - a wall time that occurs once maps to that instant;
 * - one that occurs twice (fall-back) maps to its first occurrence;
 * - one that does not occur (spring-forward gap) maps to the first valid
 *   instant after it, i.e. the transition instant.
 * Monotone: w1 < w2 implies result(w1) <= result(w2).
 */
export function firstInstantOfWall(timeZone: string, wall: number): number {
  const offsets = new Set([offsetAt(timeZone, wall - DAY), offsetAt(timeZone, wall), offsetAt(timeZone, wall + DAY)]);
  let best: number | null = null;
  for (const o of offsets) {
    const t = wall - o;
    if (offsetAt(timeZone, t) === o && (best === null || t < best)) best = t;
  }
  if (best !== null) return best;
  // In a gap: the wall clock jumps past `wall` at the transition.
  const lo = wall - Math.max(...offsets);
  const hi = wall - Math.min(...offsets);
  return firstTrue(lo, hi, (t) => wallAt(timeZone, t) > wall);
}

/**
 * When `t` lies in the second pass of a fall-back (its wall time occurred
 * before), returns the wall time at which the repeated span ends (exclusive):
 * e.g. 02:00 for New York's 01:00–02:00 repeat. Otherwise null.
 */
export function repeatedSpanEnd(timeZone: string, t: number): number | null {
  const now = offsetAt(timeZone, t);
  const before = offsetAt(timeZone, t - TRANSITION_WINDOW);
  if (before <= now) return null;
  // The fall-back transition: first instant carrying the new (smaller) offset.
  const transition = firstTrue(t - TRANSITION_WINDOW, t, (s) => offsetAt(timeZone, s) === now);
  const end = transition + before;
  return wallAt(timeZone, t) < end ? end : null;
}
