import { ValidationError } from './errors';

/** A time window, epoch ms, `from` < `to`. */
export interface TimeRange {
  fromMs: number;
  toMs: number;
}

/** The longest window a console query may span (31 days), ms. */
export const MAX_RANGE_MS = 31 * 86_400_000;

/** ISO-8601 date-time with a zone: `2026-11-29T10:00:00Z`, `…:00.123Z`, `…+01:00`; seconds optional. */
const ISO_TIME = /^\d{4}-\d\d-\d\dT\d\d:\d\d(?::\d\d(?:\.\d{1,9})?)?(?:Z|[+-]\d\d:\d\d)$/;

/**
 * Parses one ISO-8601 time of a query field.
 * @returns epoch ms, or undefined when `value` is undefined or empty.
 * @throws ValidationError naming `field` when it is not an ISO time with a zone.
 */
export function parseIsoTime(value: string | undefined, field: string): number | undefined {
  if (value === undefined || value === '') return undefined;
  const ms = ISO_TIME.test(value) ? Date.parse(value) : NaN;
  if (!Number.isFinite(ms)) throw new ValidationError(`invalid ${field}`, [{ path: field, message: 'must be an ISO-8601 time with a zone, e.g. 2026-11-29T10:00:00Z' }]);
  return ms;
}

/**
 * A query's `from`/`to` window: `to` defaults to `nowMs`, `from` to
 * `to − defaultSpanMs` (when `defaultSpanMs` is given; else `from` is
 * required once either bound is).
 * @throws ValidationError naming the field: not an ISO time, `from` not
 *   before `to`, the window longer than `maxSpanMs`, `from` missing.
 */
export function parseTimeRange(
  q: { from?: string; to?: string },
  nowMs: number,
  opts: { defaultSpanMs?: number; maxSpanMs?: number } = {},
): TimeRange {
  const max = opts.maxSpanMs ?? MAX_RANGE_MS;
  const toMs = parseIsoTime(q.to, 'to') ?? nowMs;
  let fromMs = parseIsoTime(q.from, 'from');
  if (fromMs === undefined) {
    if (opts.defaultSpanMs === undefined) throw new ValidationError('from is required', [{ path: 'from', message: 'required with this filter' }]);
    fromMs = toMs - opts.defaultSpanMs;
  }
  if (fromMs >= toMs) throw new ValidationError('invalid from', [{ path: 'from', message: 'must be before to' }]);
  if (toMs - fromMs > max) throw new ValidationError('range too long', [{ path: 'from', message: `the range from..to must be at most ${max / 86_400_000} days` }]);
  return { fromMs, toMs };
}
