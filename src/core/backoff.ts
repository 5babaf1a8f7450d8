/**
 * Retry backoff, as specified in API.md.
 *
 * Retry n (n = attempts so far, 1-based) waits
 *   fixed: d;  linear: d·n;  exponential: d·2^(n−1)
 * clamped to maxDelayMs, then jitter:
 *   none: x;  full: random[0, x];  equal: x/2 + random[0, x/2]
 * Jitter variants follow "Exponential Backoff And Jitter", Marc Brooker,
 * AWS Architecture Blog, 2015.
 */

export type BackoffType = 'fixed' | 'linear' | 'exponential';

/**
 * Largest backoff delayMs / maxDelayMs, ms: one year, as API.md bounds a job's
 * `delayMs`. A retry's runAt is then at most a year ahead (the Lua scripts
 * clamp it there too: lua/includes/clamp.lua MAX_DELAY_MS).
 */
export const MAX_BACKOFF_DELAY_MS = 31_536_000_000;
export type JitterType = 'none' | 'full' | 'equal';

export interface BackoffSpec {
  type: BackoffType;
  /** Base delay, ms, ≥ 0. */
  delayMs: number;
  /** Upper bound before jitter, ms, ≥ delayMs. */
  maxDelayMs: number;
  jitter: JitterType;
}

/** API.md default: exponential, 2000 ms, capped at 1 h, equal jitter. */
export const DEFAULT_BACKOFF: Readonly<BackoffSpec> = Object.freeze({
  type: 'exponential',
  delayMs: 2000,
  maxDelayMs: 3_600_000,
  jitter: 'equal',
});

/**
 * Delay before retry number `attempt` (the attempts made so far, ≥ 1), in ms.
 * @param random source of uniform numbers in [0, 1); injected for tests.
 * @returns an integer number of ms in [0, maxDelayMs].
 */
export function computeBackoffDelay(
  spec: BackoffSpec,
  attempt: number,
  random: () => number = Math.random,
): number {
  // NaN counts as the first retry; Infinity is capped so that d·n stays finite.
  const n = Math.min(Math.max(1, Math.floor(attempt) || 1), Number.MAX_SAFE_INTEGER);
  let x: number;
  switch (spec.type) {
    case 'fixed':
      x = spec.delayMs;
      break;
    case 'linear':
      x = spec.delayMs * n;
      break;
    case 'exponential':
      // 2^(n-1) overflows to Infinity for huge n; the clamp below handles it,
      // but 0·Infinity is NaN, so a zero base delay stays 0.
      x = spec.delayMs === 0 ? 0 : spec.delayMs * Math.pow(2, n - 1);
      break;
  }
  // The bound holds even for a spec that skipped validation.
  x = Math.min(x, spec.maxDelayMs, MAX_BACKOFF_DELAY_MS);
  if (!(x >= 0)) x = 0;
  switch (spec.jitter) {
    case 'none':
      return Math.round(x);
    case 'full':
      return Math.floor(random() * x);
    case 'equal':
      return Math.floor(x / 2 + random() * (x / 2));
  }
}

/** Compact form stored in the job hash (`type|delayMs|maxDelayMs|jitter`). */
export function encodeBackoff(spec: BackoffSpec): string {
  return `${spec.type}|${spec.delayMs}|${spec.maxDelayMs}|${spec.jitter}`;
}

/**
 * Inverse of {@link encodeBackoff}. Delays above {@link MAX_BACKOFF_DELAY_MS}
 * (stored by versions that did not bound them) read as that bound, so such
 * a job stays readable and runnable.
 * @throws Error when the string is not a valid encoded backoff.
 */
export function decodeBackoff(s: string): BackoffSpec {
  const [type, d, m, jitter] = s.split('|');
  const spec = { type, delayMs: Math.min(Number(d), MAX_BACKOFF_DELAY_MS), maxDelayMs: Math.min(Number(m), MAX_BACKOFF_DELAY_MS), jitter } as BackoffSpec;
  const problem = backoffProblem(spec);
  if (problem) throw new Error(`bad backoff "${s}": ${problem}`);
  return spec;
}

/** Returns a message describing what is wrong with `spec`, or null when valid. */
export function backoffProblem(spec: Partial<BackoffSpec>): string | null {
  if (!['fixed', 'linear', 'exponential'].includes(spec.type as string)) {
    return 'type must be fixed, linear or exponential';
  }
  if (!Number.isInteger(spec.delayMs) || (spec.delayMs as number) < 0 || (spec.delayMs as number) > MAX_BACKOFF_DELAY_MS) {
    return `delayMs must be an integer 0..${MAX_BACKOFF_DELAY_MS}`;
  }
  if (!Number.isInteger(spec.maxDelayMs) || (spec.maxDelayMs as number) < (spec.delayMs as number) || (spec.maxDelayMs as number) > MAX_BACKOFF_DELAY_MS) {
    return `maxDelayMs must be an integer delayMs..${MAX_BACKOFF_DELAY_MS}`;
  }
  if (!['none', 'full', 'equal'].includes(spec.jitter as string)) {
    return 'jitter must be none, full or equal';
  }
  return null;
}
