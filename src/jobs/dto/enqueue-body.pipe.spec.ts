import { ValidationError } from '../../core/errors';
import { EnqueueBatchPipe, EnqueueJobPipe } from './enqueue-body.pipe';

/** The details of the 400 the pipe throws for `body`. */
function refused(body: unknown, pipe: { transform(b: unknown): unknown } = new EnqueueJobPipe()): { path: string; message: string }[] {
  try {
    pipe.transform(body);
  } catch (e) {
    expect(e).toBeInstanceOf(ValidationError);
    expect((e as ValidationError).code).toBe('validation_failed');
    return (e as ValidationError).details;
  }
  throw new Error('expected a ValidationError');
}

describe('EnqueueJobPipe: concurrencyKey and debounce (API.md v1.1/v1.2 flow control per key)', () => {
  it('accepts the bounds and returns debounce as sent', () => {
    const dto = new EnqueueJobPipe().transform({
      type: 't',
      concurrencyKey: 'c'.repeat(128),
      debounce: { key: 'k'.repeat(128), windowMs: 86_400_000, maxWaitMs: 604_800_000 },
    });
    expect(dto.concurrencyKey).toBe('c'.repeat(128));
    expect(dto.debounce).toEqual({ key: 'k'.repeat(128), windowMs: 86_400_000, maxWaitMs: 604_800_000 });
    expect(new EnqueueJobPipe().transform({ type: 't', concurrencyKey: 'c', debounce: { key: 'k', windowMs: 100 } }).debounce).toEqual({ key: 'k', windowMs: 100 });
    expect(new EnqueueJobPipe().transform({ type: 't', debounce: { key: 'k', windowMs: 300, maxWaitMs: 300 } }).debounce).toMatchObject({ maxWaitMs: 300 });
  });

  it.each([
    [{ concurrencyKey: '' }, 'concurrencyKey', /1\.\.128/],
    [{ concurrencyKey: 'c'.repeat(129) }, 'concurrencyKey', /1\.\.128/],
    [{ concurrencyKey: 7 }, 'concurrencyKey', /string/],
    [{ concurrencyKey: null }, 'concurrencyKey', /must not be null/],
    [{ concurrencyKey: 'x\u0000' }, 'concurrencyKey', /NUL/],
    [{ debounce: 'k' }, 'debounce', /object/],
    [{ debounce: null }, 'debounce', /must not be null/],
    [{ debounce: { windowMs: 100 } }, 'debounce.key', /1\.\.128/],
    [{ debounce: { key: 'k'.repeat(129), windowMs: 100 } }, 'debounce.key', /1\.\.128/],
    [{ debounce: { key: 'k', windowMs: 99 } }, 'debounce.windowMs', /integer 100\.\.86400000/],
    [{ debounce: { key: 'k', windowMs: 86_400_001 } }, 'debounce.windowMs', /integer 100\.\.86400000/],
    [{ debounce: { key: 'k', windowMs: 1.5 } }, 'debounce.windowMs', /integer 100\.\.86400000/],
    [{ debounce: { key: 'k', windowMs: 1000, maxWaitMs: 999 } }, 'debounce.maxWaitMs', /windowMs\.\.604800000/],
    [{ debounce: { key: 'k', windowMs: 1000, maxWaitMs: 604_800_001 } }, 'debounce.maxWaitMs', /windowMs\.\.604800000/],
    [{ debounce: { key: 'k', windowMs: 1000, maxWaitMs: null } }, 'debounce.maxWaitMs', /must not be null/],
    [{ debounce: { key: 'k', windowMs: 100, extra: 1 } }, 'debounce.extra', /unknown field/],
    [{ debounce: { key: 'k', windowMs: 100, constructor: 1 } }, 'debounce.constructor', /unknown field/],
  ])('%j → 400 on %s', (fields, path, message) => {
    const d = refused({ type: 't', ...fields });
    expect(d).toContainEqual({ path, message: expect.stringMatching(message) });
    expect(d.every((x) => x.path === path)).toBe(true);
  });

  it('an empty debounce names both required fields', () => {
    expect([...new Set(refused({ type: 't', debounce: {} }).map((x) => x.path))].sort()).toEqual(['debounce.key', 'debounce.windowMs']);
  });

  it('in a batch, the path names the index', () => {
    const d = refused({ jobs: [{ type: 't' }, { type: 't', concurrencyKey: '', debounce: { key: 'k', windowMs: 5 } }] }, new EnqueueBatchPipe());
    expect(d.map((x) => x.path).sort()).toEqual(['jobs.1.concurrencyKey', 'jobs.1.debounce.windowMs']);
  });
});
