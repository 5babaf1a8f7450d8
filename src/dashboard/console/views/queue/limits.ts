import type { KeyOverride } from '../../api/queues';
import type { KeyLimits, QueueKey } from '../../api/types';
import { duration } from '../../components/bits';

/** Bounds of API.md v1.1/v1.2 flow control per key, checked here before the server does. */
export const KEY_BOUNDS = {
  concurrency: [1, 100_000],
  rateMax: [1, 10_000],
  rateDurationMs: [1, 86_400_000],
  agingMs: [1000, 86_400_000],
} as const;

const INT = /^\d+$/;

/**
 * Reads an optional integer field: blank → null, else an integer within `[min, max]`.
 * @returns the number (or null), or the complaint when it is not one.
 */
export function optionalInt(s: string, [min, max]: readonly [number, number]): { value: number | null } | { error: string } {
  const t = s.trim();
  if (t === '') return { value: null };
  const n = INT.test(t) ? Number(t) : NaN;
  if (!Number.isSafeInteger(n) || n < min || n > max) return { error: `must be an integer ${min}..${max}` };
  return { value: n };
}

/**
 * A rate limit from its two fields: both blank → null; one of them blank, or out
 * of bounds → errors keyed `<path>.max` / `<path>.durationMs` (the server's detail paths).
 */
export function optionalRate(path: string, max: string, durationMs: string, errors: Record<string, string>): { max: number; durationMs: number } | null {
  if (max.trim() === '' && durationMs.trim() === '') return null;
  const m = optionalInt(max, KEY_BOUNDS.rateMax);
  const d = optionalInt(durationMs, KEY_BOUNDS.rateDurationMs);
  if ('error' in m) errors[`${path}.max`] = m.error;
  else if (m.value === null) errors[`${path}.max`] = 'needed with a window';
  if ('error' in d) errors[`${path}.durationMs`] = d.error;
  else if (d.value === null) errors[`${path}.durationMs`] = 'needed with a number of starts';
  return 'value' in m && 'value' in d && m.value !== null && d.value !== null ? { max: m.value, durationMs: d.value } : null;
}

/** The fields of the override editor, as typed. */
export interface OverrideDraft {
  key: string;
  concurrency: string;
  rateMax: string;
  rateDurationMs: string;
}

export function overrideDraft(k: Pick<QueueKey, 'key' | 'overrides'> | null): OverrideDraft {
  const o = k?.overrides;
  return {
    key: k?.key ?? '',
    concurrency: o?.concurrency == null ? '' : String(o.concurrency),
    rateMax: o?.rateLimit ? String(o.rateLimit.max) : '',
    rateDurationMs: o?.rateLimit ? String(o.rateLimit.durationMs) : '',
  };
}

/**
 * Checks an override the way the server will (concurrency 1..100,000, rate
 * limit max 1..10,000 per 1..86,400,000 ms; the key 1..128 characters, not `.`
 * or `..`) and builds the `PUT /queues/:name/keys/:key` body. Both fields are
 * sent, so a cleared field clears that part of the override; an override with
 * neither is refused (that is what removing it is for).
 * @returns the key and body, or errors keyed like the server's `details[].path` (`key` for the key, `''` for the form).
 */
export function toOverride(d: OverrideDraft): { key: string; body: Required<KeyOverride> } | { errors: Record<string, string> } {
  const errors: Record<string, string> = {};
  const chars = [...d.key].length;
  if (chars < 1 || chars > 128) errors.key = 'must be 1..128 characters';
  else if (d.key === '.' || d.key === '..') errors.key = 'cannot be "." or ".." (not addressable in a URL)';
  const c = optionalInt(d.concurrency, KEY_BOUNDS.concurrency);
  if ('error' in c) errors.concurrency = c.error;
  const rateLimit = optionalRate('rateLimit', d.rateMax, d.rateDurationMs, errors);
  if (Object.keys(errors).length) return { errors };
  const concurrency = 'value' in c ? c.value : null;
  if (concurrency === null && rateLimit === null) return { errors: { '': "Set a concurrency or a rate limit (Remove override goes back to the queue's limits)." } };
  return { key: d.key, body: { concurrency, rateLimit } };
}

/** "10 per 1.0 s", or "none". */
export function rateText(r: KeyLimits['rateLimit'] | null | undefined): string {
  return r ? `${r.max} per ${duration(r.durationMs)}` : 'none';
}

/** "5", or "none". */
export function concurrencyText(n: number | null | undefined): string {
  return n == null ? 'none' : String(n);
}
