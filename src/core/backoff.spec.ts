import {
  BackoffSpec,
  BackoffType,
  DEFAULT_BACKOFF,
  JitterType,
  MAX_BACKOFF_DELAY_MS,
  backoffProblem,
  computeBackoffDelay,
  decodeBackoff,
  encodeBackoff,
} from './backoff';

const spec = (type: BackoffType, delayMs: number, maxDelayMs: number, jitter: JitterType = 'none'): BackoffSpec => ({
  type,
  delayMs,
  maxDelayMs,
  jitter,
});

/** A random source that must never be called. */
const noRandom = () => {
  throw new Error('random() must not be called for jitter none');
};
const constant = (v: number) => () => v;

describe('DEFAULT_BACKOFF', () => {
  it('is the documented default (exponential, 2000 ms, 1 h, equal) and frozen', () => {
    expect(DEFAULT_BACKOFF).toEqual({ type: 'exponential', delayMs: 2000, maxDelayMs: 3_600_000, jitter: 'equal' });
    expect(Object.isFrozen(DEFAULT_BACKOFF)).toBe(true);
    expect(backoffProblem(DEFAULT_BACKOFF)).toBeNull();
  });

  it('never yields zero for the first retry, whatever the random source (C9)', () => {
    for (const r of [0, 0.5, 0.999999]) {
      expect(computeBackoffDelay(DEFAULT_BACKOFF, 1, constant(r))).toBeGreaterThanOrEqual(1000);
    }
  });
});

describe('computeBackoffDelay without jitter', () => {
  it('fixed waits d for every retry', () => {
    const s = spec('fixed', 1500, 10_000);
    expect([1, 2, 3, 10, 50].map((n) => computeBackoffDelay(s, n, noRandom))).toEqual([1500, 1500, 1500, 1500, 1500]);
  });

  it('linear waits d·n', () => {
    const s = spec('linear', 1000, 1_000_000);
    expect([1, 2, 3, 4, 7].map((n) => computeBackoffDelay(s, n, noRandom))).toEqual([1000, 2000, 3000, 4000, 7000]);
  });

  it('exponential waits d·2^(n−1) (C9: 1, 2, 4 s)', () => {
    const s = spec('exponential', 1000, 1_000_000);
    expect([1, 2, 3, 4, 5].map((n) => computeBackoffDelay(s, n, noRandom))).toEqual([1000, 2000, 4000, 8000, 16000]);
  });

  it('clamps to maxDelayMs before jitter', () => {
    expect(computeBackoffDelay(spec('linear', 1000, 2500), 3, noRandom)).toBe(2500);
    expect(computeBackoffDelay(spec('exponential', 1000, 5000), 4, noRandom)).toBe(5000);
    expect(computeBackoffDelay(spec('exponential', 1000, 5000), 3, noRandom)).toBe(4000);
    expect(computeBackoffDelay(spec('fixed', 5000, 5000), 1, noRandom)).toBe(5000);
  });

  it('treats attempts below 1 as 1 and floors fractional attempts', () => {
    const s = spec('exponential', 100, 1_000_000);
    expect(computeBackoffDelay(s, 0, noRandom)).toBe(100);
    expect(computeBackoffDelay(s, -5, noRandom)).toBe(100);
    expect(computeBackoffDelay(s, 3.9, noRandom)).toBe(400);
    expect(computeBackoffDelay(spec('linear', 100, 1000), 0, noRandom)).toBe(100);
  });

  it('a zero base delay means zero for every type', () => {
    for (const type of ['fixed', 'linear', 'exponential'] as const) {
      expect(computeBackoffDelay(spec(type, 0, 0), 1, noRandom)).toBe(0);
      expect(computeBackoffDelay(spec(type, 0, 1000), 5, noRandom)).toBe(0);
    }
  });
});

describe('computeBackoffDelay with jitter (injected randomness)', () => {
  it('full jitter is random·x, from 0 up to (not beyond) x', () => {
    const s = spec('exponential', 1000, 1_000_000, 'full');
    expect(computeBackoffDelay(s, 3, constant(0))).toBe(0);
    expect(computeBackoffDelay(s, 3, constant(0.25))).toBe(1000);
    expect(computeBackoffDelay(s, 3, constant(0.5))).toBe(2000);
    const top = computeBackoffDelay(s, 3, constant(0.9999999));
    expect(top).toBeLessThanOrEqual(4000);
    expect(top).toBeGreaterThanOrEqual(3999);
  });

  it('equal jitter is x/2 + random·x/2', () => {
    const s = spec('fixed', 1000, 1000, 'equal');
    expect(computeBackoffDelay(s, 1, constant(0))).toBe(500);
    expect(computeBackoffDelay(s, 1, constant(0.5))).toBe(750);
    const top = computeBackoffDelay(s, 1, constant(0.9999999));
    expect(top).toBeLessThanOrEqual(1000);
    expect(top).toBeGreaterThanOrEqual(999);
  });

  it('jitter applies after the clamp', () => {
    const s = spec('exponential', 1000, 3000, 'equal');
    expect(computeBackoffDelay(s, 10, constant(0))).toBe(1500);
    expect(computeBackoffDelay(spec('linear', 1000, 3000, 'full'), 10, constant(0.5))).toBe(1500);
  });

  it('calls the random source exactly once for full and equal, never for none', () => {
    for (const jitter of ['full', 'equal'] as const) {
      const r = jest.fn(() => 0.3);
      computeBackoffDelay(spec('linear', 10, 100, jitter), 2, r);
      expect(r).toHaveBeenCalledTimes(1);
    }
    expect(() => computeBackoffDelay(spec('linear', 10, 100, 'none'), 2, noRandom)).not.toThrow();
  });

  it('always returns an integer in [0, maxDelayMs] (grid over types, jitters, attempts, random values)', () => {
    for (const type of ['fixed', 'linear', 'exponential'] as const) {
      for (const jitter of ['none', 'full', 'equal'] as const) {
        for (const [d, m] of [[0, 0], [0, 10], [1, 1], [7, 1000], [333, 3_600_000]]) {
          for (const n of [1, 2, 3, 10, 31, 32, 53, 64, 100]) {
            for (const r of [0, 0.1, 0.5, 0.999999]) {
              const v = computeBackoffDelay(spec(type, d, m, jitter), n, constant(r));
              expect(Number.isInteger(v)).toBe(true);
              expect(v).toBeGreaterThanOrEqual(0);
              expect(v).toBeLessThanOrEqual(m);
            }
          }
        }
      }
    }
  });
});

describe('computeBackoffDelay with huge attempt counts', () => {
  it('exponential clamps where 2^(n−1) overflows to Infinity', () => {
    const s = spec('exponential', 1000, 3_600_000);
    for (const n of [1025, 1e6, Number.MAX_SAFE_INTEGER, Number.MAX_VALUE, Infinity]) {
      expect(computeBackoffDelay(s, n, noRandom)).toBe(3_600_000);
    }
  });

  it('linear clamps for huge n', () => {
    const s = spec('linear', 1000, 60_000);
    for (const n of [1e6, Number.MAX_SAFE_INTEGER, Infinity]) {
      expect(computeBackoffDelay(s, n, noRandom)).toBe(60_000);
    }
  });

  it('a zero base delay stays 0 (not NaN from 0·Infinity) for huge n', () => {
    for (const type of ['linear', 'exponential'] as const) {
      for (const jitter of ['none', 'full', 'equal'] as const) {
        for (const n of [1025, 1e6, Infinity]) {
          expect(computeBackoffDelay(spec(type, 0, 1000, jitter), n, constant(0.5))).toBe(0);
        }
      }
    }
  });

  it('jittered delays for huge n stay finite and within bounds', () => {
    const full = computeBackoffDelay(spec('exponential', 1000, 3_600_000, 'full'), 1e9, constant(0.5));
    expect(full).toBe(1_800_000);
    const equal = computeBackoffDelay(spec('exponential', 1000, 3_600_000, 'equal'), 1e9, constant(0.5));
    expect(equal).toBe(2_700_000);
  });

  it('a NaN attempt count is treated as the first retry, never yields NaN', () => {
    expect(computeBackoffDelay(spec('exponential', 1000, 3_600_000), NaN, noRandom)).toBe(1000);
  });
});

describe('encodeBackoff / decodeBackoff', () => {
  it('round-trips every type and jitter', () => {
    for (const type of ['fixed', 'linear', 'exponential'] as const) {
      for (const jitter of ['none', 'full', 'equal'] as const) {
        const s = spec(type, 250, 90_000, jitter);
        expect(encodeBackoff(s)).toBe(`${type}|250|90000|${jitter}`);
        expect(decodeBackoff(encodeBackoff(s))).toEqual(s);
      }
    }
    expect(decodeBackoff(encodeBackoff(DEFAULT_BACKOFF))).toEqual(DEFAULT_BACKOFF);
  });

  it.each([
    ['', 'type'],
    ['random|1|2|none', 'type'],
    ['fixed|x|2|none', 'delayMs'],
    ['fixed|-1|2|none', 'delayMs'],
    ['fixed|1.5|2|none', 'delayMs'],
    ['fixed|5|2|none', 'maxDelayMs'],
    ['fixed|5|abc|none', 'maxDelayMs'],
    ['fixed|1|2|weird', 'jitter'],
    ['fixed|1|2', 'jitter'],
  ])('rejects %j (%s)', (s, what) => {
    expect(() => decodeBackoff(s)).toThrow(new RegExp(`bad backoff.*${what}`));
  });
});

describe('backoffProblem', () => {
  it('accepts maxDelayMs == delayMs and zero delays', () => {
    expect(backoffProblem(spec('fixed', 0, 0))).toBeNull();
    expect(backoffProblem(spec('linear', 10, 10, 'full'))).toBeNull();
  });

  it('names the bad field', () => {
    expect(backoffProblem({ ...DEFAULT_BACKOFF, type: 'quadratic' as BackoffType })).toMatch(/type/);
    expect(backoffProblem({ ...DEFAULT_BACKOFF, delayMs: -1 })).toMatch(/delayMs/);
    expect(backoffProblem({ ...DEFAULT_BACKOFF, delayMs: 1.5 })).toMatch(/delayMs/);
    expect(backoffProblem({ ...DEFAULT_BACKOFF, delayMs: NaN })).toMatch(/delayMs/);
    expect(backoffProblem({ ...DEFAULT_BACKOFF, maxDelayMs: 10 })).toMatch(/maxDelayMs/);
    expect(backoffProblem({ ...DEFAULT_BACKOFF, maxDelayMs: Infinity })).toMatch(/maxDelayMs/);
    expect(backoffProblem({ ...DEFAULT_BACKOFF, jitter: 'half' as JitterType })).toMatch(/jitter/);
    expect(backoffProblem({})).toMatch(/type/);
  });
});

describe('bounds (docs/configuration.md "Limits")', () => {
  it('accepts delays up to one year, refuses one ms more, naming the field', () => {
    expect(MAX_BACKOFF_DELAY_MS).toBe(31_536_000_000);
    expect(backoffProblem(spec('fixed', MAX_BACKOFF_DELAY_MS, MAX_BACKOFF_DELAY_MS))).toBeNull();
    expect(backoffProblem(spec('fixed', MAX_BACKOFF_DELAY_MS + 1, MAX_BACKOFF_DELAY_MS + 1))).toMatch(/^delayMs/);
    expect(backoffProblem(spec('fixed', 0, MAX_BACKOFF_DELAY_MS + 1))).toMatch(/^maxDelayMs/);
    expect(backoffProblem(spec('fixed', 1e19, 1e19))).toMatch(/^delayMs/);
  });

  it('decodes a stored backoff past the bound (an older version) as the bound, so the job stays runnable', () => {
    expect(decodeBackoff('fixed|10000000000000000000|1e+19|none')).toEqual(spec('fixed', MAX_BACKOFF_DELAY_MS, MAX_BACKOFF_DELAY_MS, 'none'));
    expect(decodeBackoff('exponential|2000|9000000000000000|equal')).toEqual(spec('exponential', 2000, MAX_BACKOFF_DELAY_MS, 'equal'));
  });

  it('never computes a delay past the bound, even from a spec that skipped validation', () => {
    for (const jitter of ['none', 'full', 'equal'] as const) {
      for (const type of ['fixed', 'linear', 'exponential'] as const) {
        const d = computeBackoffDelay(spec(type, 1e19, 1e20, jitter), 50, () => 0.999);
        expect(d).toBeGreaterThanOrEqual(0);
        expect(d).toBeLessThanOrEqual(MAX_BACKOFF_DELAY_MS);
      }
    }
  });
});
