import { DEFAULT_BACKOFF } from './backoff';
import { ValidationError } from './errors';
import { EnqueueInput, flowKeyProblem, LIMITS, NAMED_PRIORITIES, PayloadTooLargeError, normalizeEnqueue } from './job-options';

const MAX = 524_288;

/** Runs normalizeEnqueue expecting a ValidationError; returns its details. */
function details(input: unknown, max = MAX, prefix = ''): { path: string; message: string }[] {
  try {
    normalizeEnqueue(input as EnqueueInput, max, prefix);
  } catch (e) {
    expect(e).toBeInstanceOf(ValidationError);
    expect(e).not.toBeInstanceOf(PayloadTooLargeError);
    return (e as ValidationError).details;
  }
  throw new Error('expected a ValidationError');
}
const paths = (input: unknown) => details(input).map((d) => d.path);

describe('normalizeEnqueue: defaults', () => {
  it('fills queue, payload and priority, leaves per-queue options undefined', () => {
    expect(normalizeEnqueue({ type: 'send_email' }, MAX)).toEqual({
      queue: 'default',
      type: 'send_email',
      payloadJson: '{}',
      priority: 0,
      delayMs: undefined,
      runAt: undefined,
      maxAttempts: undefined,
      backoff: undefined,
      timeoutMs: undefined,
      idempotencyKey: undefined,
    });
  });

  it('keeps every valid option', () => {
    const n = normalizeEnqueue(
      {
        type: 'a.b:c-d_e',
        queue: 'q_1-x',
        payload: { to: 'x@y', n: [1, 2, { z: null }] },
        priority: -100,
        delayMs: LIMITS.maxDelayMs,
        maxAttempts: 100,
        backoff: { type: 'fixed', delayMs: 5, maxDelayMs: 5, jitter: 'none' },
        timeoutMs: LIMITS.maxTimeoutMs,
        idempotencyKey: 'k'.repeat(255),
      },
      MAX,
    );
    expect(n).toMatchObject({
      queue: 'q_1-x',
      type: 'a.b:c-d_e',
      payloadJson: '{"to":"x@y","n":[1,2,{"z":null}]}',
      priority: -100,
      delayMs: LIMITS.maxDelayMs,
      maxAttempts: 100,
      backoff: { type: 'fixed', delayMs: 5, maxDelayMs: 5, jitter: 'none' },
      timeoutMs: LIMITS.maxTimeoutMs,
      idempotencyKey: 'k'.repeat(255),
    });
  });

  it('fills a partial backoff from the default', () => {
    const n = normalizeEnqueue({ type: 't', backoff: { type: 'linear' } as never }, MAX);
    expect(n.backoff).toEqual({ ...DEFAULT_BACKOFF, type: 'linear' });
  });

  it('treats payload null like an absent payload ({})', () => {
    expect(normalizeEnqueue({ type: 't', payload: null as never }, MAX).payloadJson).toBe('{}');
  });

  it('accepts runAt (epoch ms) and delayMs 0', () => {
    expect(normalizeEnqueue({ type: 't', runAt: 0 }, MAX).runAt).toBe(0);
    expect(normalizeEnqueue({ type: 't', runAt: 1_900_000_000_000 }, MAX).runAt).toBe(1_900_000_000_000);
    expect(normalizeEnqueue({ type: 't', delayMs: 0 }, MAX).delayMs).toBe(0);
  });
});

describe('normalizeEnqueue: priority', () => {
  it('maps the named priorities', () => {
    expect(NAMED_PRIORITIES).toEqual({ high: 10, normal: 0, low: -10 });
    expect(normalizeEnqueue({ type: 't', priority: 'high' }, MAX).priority).toBe(10);
    expect(normalizeEnqueue({ type: 't', priority: 'normal' }, MAX).priority).toBe(0);
    expect(normalizeEnqueue({ type: 't', priority: 'low' }, MAX).priority).toBe(-10);
  });

  it('accepts integers -100..100', () => {
    for (const p of [-100, -1, 0, 1, 100]) expect(normalizeEnqueue({ type: 't', priority: p }, MAX).priority).toBe(p);
  });

  it.each([101, -101, 1.5, NaN, Infinity, '10', 'HIGH', 'urgent', '', null, true, {}])('rejects %p', (p) => {
    expect(paths({ type: 't', priority: p })).toEqual(['priority']);
  });

  it.each(['toString', 'constructor', '__proto__', 'hasOwnProperty', 'valueOf'])(
    'rejects the inherited Object property name %p (not a named priority)',
    (p) => {
      expect(paths({ type: 't', priority: p })).toEqual(['priority']);
    },
  );
});

describe('normalizeEnqueue: field rules', () => {
  it.each([
    [{ type: '' }, 'type'],
    [{ type: 'a'.repeat(129) }, 'type'],
    [{ type: 'has space' }, 'type'],
    [{ type: 'emoji😀' }, 'type'],
    [{ type: 42 }, 'type'],
    [{}, 'type'],
    [{ type: 't', queue: 'Upper' }, 'queue'],
    [{ type: 't', queue: '-lead' }, 'queue'],
    [{ type: 't', queue: '_lead' }, 'queue'],
    [{ type: 't', queue: 'a'.repeat(65) }, 'queue'],
    [{ type: 't', queue: 'a.b' }, 'queue'],
    [{ type: 't', queue: '' }, 'queue'],
    [{ type: 't', queue: 'a{b}' }, 'queue'],
    [{ type: 't', payload: [1, 2] }, 'payload'],
    [{ type: 't', payload: 'str' }, 'payload'],
    [{ type: 't', delayMs: -1 }, 'delayMs'],
    [{ type: 't', delayMs: LIMITS.maxDelayMs + 1 }, 'delayMs'],
    [{ type: 't', delayMs: 1.5 }, 'delayMs'],
    [{ type: 't', delayMs: '100' }, 'delayMs'],
    [{ type: 't', runAt: -1 }, 'runAt'],
    [{ type: 't', runAt: 1.5 }, 'runAt'],
    [{ type: 't', runAt: 1e300 }, 'runAt'], // would wrap as a C long in the Lua scripts
    [{ type: 't', runAt: '2026-01-01T00:00:00Z' }, 'runAt'],
    [{ type: 't', maxAttempts: 0 }, 'maxAttempts'],
    [{ type: 't', maxAttempts: 101 }, 'maxAttempts'],
    [{ type: 't', maxAttempts: 2.5 }, 'maxAttempts'],
    [{ type: 't', backoff: 'exponential' }, 'backoff'],
    [{ type: 't', backoff: null }, 'backoff'],
    [{ type: 't', backoff: { type: 'cubic' } }, 'backoff.type'],
    [{ type: 't', backoff: { delayMs: 5000, maxDelayMs: 1000 } }, 'backoff.maxDelayMs'],
    [{ type: 't', backoff: { jitter: 'some' } }, 'backoff.jitter'],
    [{ type: 't', backoff: { delayMs: 31_536_000_001 } }, 'backoff.delayMs'],
    [{ type: 't', backoff: { delayMs: 0, maxDelayMs: 31_536_000_001 } }, 'backoff.maxDelayMs'],
    [{ type: 't', timeoutMs: 0 }, 'timeoutMs'],
    [{ type: 't', timeoutMs: LIMITS.maxTimeoutMs + 1 }, 'timeoutMs'],
    [{ type: 't', idempotencyKey: '' }, 'idempotencyKey'],
    [{ type: 't', idempotencyKey: 'k'.repeat(256) }, 'idempotencyKey'],
    [{ type: 't', idempotencyKey: 12 }, 'idempotencyKey'],
  ])('%j is refused on %s', (input, path) => {
    expect(paths(input)).toEqual([path]);
  });

  it('refuses delayMs together with runAt', () => {
    const d = details({ type: 't', delayMs: 10, runAt: 10 });
    expect(d).toHaveLength(1);
    expect(d[0]).toEqual({ path: 'delayMs', message: expect.stringMatching(/mutually exclusive/) });
  });

  it('lists every bad field at once, with the path prefix (batch index)', () => {
    const d = details({ type: '', queue: 'BAD', priority: 1000, maxAttempts: 0, timeoutMs: -1 }, MAX, 'jobs[3].');
    expect(d.map((x) => x.path)).toEqual(['jobs[3].queue', 'jobs[3].type', 'jobs[3].priority', 'jobs[3].maxAttempts', 'jobs[3].timeoutMs']);
    for (const x of d) expect(x.message).toEqual(expect.any(String));
  });

  it('the ValidationError carries code validation_failed', () => {
    try {
      normalizeEnqueue({ type: '' }, MAX);
      throw new Error('unreachable');
    } catch (e) {
      expect((e as ValidationError).code).toBe('validation_failed');
      expect((e as Error).name).toBe('ValidationError');
    }
  });
});

describe('normalizeEnqueue: payload size', () => {
  it('measures the serialized payload in UTF-8 bytes, limit inclusive', () => {
    // {"a":"…"} is 8 bytes of framing; é is 2 bytes in UTF-8.
    const atLimit = { a: 'é'.repeat(46) }; // 8 + 92 = 100 bytes
    expect(Buffer.byteLength(JSON.stringify(atLimit))).toBe(100);
    expect(normalizeEnqueue({ type: 't', payload: atLimit }, 100).payloadJson).toBe(JSON.stringify(atLimit));
    const over = { a: 'é'.repeat(46) + 'x' };
    expect(() => normalizeEnqueue({ type: 't', payload: over }, 100)).toThrow(PayloadTooLargeError);
  });

  it('PayloadTooLargeError has code payload_too_large, names the limit and is a ValidationError', () => {
    try {
      normalizeEnqueue({ type: 't', payload: { a: 'x'.repeat(100) } }, 50);
      throw new Error('unreachable');
    } catch (e) {
      expect(e).toBeInstanceOf(PayloadTooLargeError);
      expect(e).toBeInstanceOf(ValidationError);
      const p = e as PayloadTooLargeError;
      expect(p.code).toBe('payload_too_large');
      expect(p.limitBytes).toBe(50);
      expect(p.message).toMatch(/50 bytes/);
      expect(p.name).toBe('PayloadTooLargeError');
    }
  });

  it('field errors win over the size check', () => {
    expect(paths({ type: '', payload: { a: 'x'.repeat(1000) } })).toEqual(['type']);
  });

  it('serializes a lone surrogate as an escape (well-formed JSON), emoji as UTF-8', () => {
    const n = normalizeEnqueue({ type: 't', payload: { s: '\ud800', e: '😀' } }, MAX);
    expect(n.payloadJson).toBe('{"s":"\\ud800","e":"😀"}');
    expect(JSON.parse(n.payloadJson)).toEqual({ s: '\ud800', e: '😀' });
  });
});

describe('normalizeEnqueue: flow control per key (concurrencyKey, debounce)', () => {
  it('keeps a concurrencyKey of 1 and of 128 characters, and a debounce with or without maxWaitMs', () => {
    expect(normalizeEnqueue({ type: 't', concurrencyKey: 'c' }, MAX).concurrencyKey).toBe('c');
    expect(normalizeEnqueue({ type: 't', concurrencyKey: 'é'.repeat(128) }, MAX).concurrencyKey).toBe('é'.repeat(128));
    expect(normalizeEnqueue({ type: 't', concurrencyKey: '😀'.repeat(64) }, MAX).concurrencyKey).toBe('😀'.repeat(64));
    expect(normalizeEnqueue({ type: 't', debounce: { key: 'k', windowMs: 100 } }, MAX).debounce).toEqual({ key: 'k', windowMs: 100 });
    expect(normalizeEnqueue({ type: 't', debounce: { key: 'k'.repeat(128), windowMs: 86_400_000, maxWaitMs: 604_800_000 } }, MAX).debounce).toEqual({
      key: 'k'.repeat(128),
      windowMs: 86_400_000,
      maxWaitMs: 604_800_000,
    });
    // maxWaitMs may equal windowMs; concurrencyKey and debounce together are fine.
    expect(normalizeEnqueue({ type: 't', concurrencyKey: 'c', debounce: { key: 'k', windowMs: 500, maxWaitMs: 500 } }, MAX)).toMatchObject({
      concurrencyKey: 'c',
      debounce: { key: 'k', windowMs: 500, maxWaitMs: 500 },
    });
  });

  it('leaves both undefined when absent', () => {
    const n = normalizeEnqueue({ type: 't' }, MAX);
    expect(n.concurrencyKey).toBeUndefined();
    expect(n.debounce).toBeUndefined();
  });

  it('keeps only the known fields of debounce', () => {
    const n = normalizeEnqueue({ type: 't', debounce: { key: 'k', windowMs: 100, extra: 1 } as never }, MAX);
    expect(n.debounce).toEqual({ key: 'k', windowMs: 100 });
  });

  it.each([
    [{ concurrencyKey: '' }, 'concurrencyKey', /1\.\.128/],
    [{ concurrencyKey: 'c'.repeat(129) }, 'concurrencyKey', /1\.\.128/],
    [{ concurrencyKey: 42 }, 'concurrencyKey', /string/],
    [{ concurrencyKey: null }, 'concurrencyKey', /string/],
    [{ concurrencyKey: 'a\u0000b' }, 'concurrencyKey', /NUL/],
    [{ concurrencyKey: 'a\ud800' }, 'concurrencyKey', /surrogate/],
    [{ concurrencyKey: '\udc00a' }, 'concurrencyKey', /surrogate/],
    [{ debounce: 'k' }, 'debounce', /object/],
    [{ debounce: null }, 'debounce', /object/],
    [{ debounce: [1] }, 'debounce', /object/],
    [{ debounce: { windowMs: 100 } }, 'debounce.key', /1\.\.128/],
    [{ debounce: { key: '', windowMs: 100 } }, 'debounce.key', /1\.\.128/],
    [{ debounce: { key: 'k'.repeat(129), windowMs: 100 } }, 'debounce.key', /1\.\.128/],
    [{ debounce: { key: 'a\u0000', windowMs: 100 } }, 'debounce.key', /NUL/],
    [{ debounce: { key: '\ud83d', windowMs: 100 } }, 'debounce.key', /surrogate/],
    [{ debounce: { key: 'k' } }, 'debounce.windowMs', /100\.\.86400000/],
    [{ debounce: { key: 'k', windowMs: 99 } }, 'debounce.windowMs', /100\.\.86400000/],
    [{ debounce: { key: 'k', windowMs: 86_400_001 } }, 'debounce.windowMs', /100\.\.86400000/],
    [{ debounce: { key: 'k', windowMs: 100.5 } }, 'debounce.windowMs', /integer/],
    [{ debounce: { key: 'k', windowMs: '100' } }, 'debounce.windowMs', /integer/],
    [{ debounce: { key: 'k', windowMs: 1000, maxWaitMs: 999 } }, 'debounce.maxWaitMs', /windowMs\.\.604800000/],
    [{ debounce: { key: 'k', windowMs: 1000, maxWaitMs: 604_800_001 } }, 'debounce.maxWaitMs', /604800000/],
    [{ debounce: { key: 'k', windowMs: 1000, maxWaitMs: 1000.5 } }, 'debounce.maxWaitMs', /integer/],
    [{ debounce: { key: 'k', windowMs: 1000, maxWaitMs: null } }, 'debounce.maxWaitMs', /integer/],
    [{ debounce: { key: 'k', windowMs: 100 }, idempotencyKey: 'i' }, 'debounce', /idempotencyKey/],
  ])('%j is refused on %s', (input, path, message) => {
    const d = details({ type: 't', ...input });
    expect(d).toEqual([{ path, message: expect.stringMatching(message) }]);
  });

  it('a bad windowMs bounds maxWaitMs by the smallest window; every bad field is listed, with the batch prefix', () => {
    expect(details({ type: 't', debounce: { key: '', windowMs: 5, maxWaitMs: 50 } }, MAX, 'jobs.2.').map((x) => x.path)).toEqual([
      'jobs.2.debounce.key',
      'jobs.2.debounce.windowMs',
      'jobs.2.debounce.maxWaitMs',
    ]);
    expect(paths({ type: 't', debounce: { key: 'k', windowMs: 5, maxWaitMs: 100 } })).toEqual(['debounce.windowMs']);
    expect(paths({ type: 't', concurrencyKey: '', debounce: { key: 'k', windowMs: 100 }, idempotencyKey: 'i' })).toEqual(['concurrencyKey', 'debounce']);
  });
});

describe('flowKeyProblem', () => {
  it('accepts 1..128 well-formed characters and names the problem otherwise', () => {
    expect(flowKeyProblem('x')).toBeNull();
    expect(flowKeyProblem('x'.repeat(LIMITS.maxFlowKeyLength))).toBeNull();
    expect(flowKeyProblem('customer/42 ü 😀')).toBeNull();
    expect(flowKeyProblem('x'.repeat(129))).toMatch(/1\.\.128/);
    expect(flowKeyProblem('')).toMatch(/1\.\.128/);
    expect(flowKeyProblem(undefined)).toMatch(/string/);
    expect(flowKeyProblem('\u0000')).toMatch(/NUL/);
    expect(flowKeyProblem('\udfff')).toMatch(/surrogate/);
  });
});
