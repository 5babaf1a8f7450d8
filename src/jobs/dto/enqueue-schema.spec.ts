import fc from 'fast-check';
import { ValidationError } from '../../core/errors';
import { assign, check, Details, EnqueueBatchPipe, EnqueueJobPipe, requireObject, toJobDto } from './enqueue-body.pipe';
import { EnqueueBatchDto, EnqueueJobDto } from './enqueue-job.dto';
import { isValidBatchBody, isValidJobBody } from './enqueue-schema';

/** The class-validator path alone (what the pipes did before the compiled validator): true when it accepts. */
function dtoAccepts(body: unknown): boolean {
  try {
    requireObject(body);
    const extra: Details = [];
    check(toJobDto(body, '', extra) as EnqueueJobDto, extra);
    return true;
  } catch (e) {
    if (e instanceof ValidationError) return false;
    throw e;
  }
}

function dtoAcceptsBatch(body: unknown): boolean {
  try {
    requireObject(body);
    const extra: Details = [];
    const dto = assign(new EnqueueBatchDto(), body, '', extra);
    if (Array.isArray(dto.jobs)) dto.jobs = dto.jobs.map((j, i) => toJobDto(j, `jobs.${i}.`, extra)) as EnqueueJobDto[];
    check(dto, extra);
    return true;
  } catch (e) {
    if (e instanceof ValidationError) return false;
    throw e;
  }
}

/** Values at and around every bound of the DTO, of every JSON type. */
const ODD: unknown[] = [null, true, false, 0, -0, 1, -1, 1.5, 1e21, -1e21, '', ' ', 'x', [], [1], {}, { a: 1 }, '\u0000', '\uFE0F', '\uD83D\uDE00', 'é'];
const FIELDS: Record<string, unknown[]> = {
  type: ['t', 'send_email', 'a.b:c-d', 'x'.repeat(128), 'x'.repeat(129), 'bad type', 'é', 'a\n'],
  payload: [{}, { to: 'a' }, { nested: { deep: [1, 2] } }],
  queue: ['default', 'q', 'q-1_x', 'a'.repeat(64), 'a'.repeat(65), 'Q', '-q', '_q', 'q/x', 'q\n'],
  priority: [-101, -100, 0, 100, 101, 'high', 'normal', 'low', 'HIGH', 'constructor', 'toString', '__proto__', 2.5],
  delayMs: [0, 1, 31_536_000_000, 31_536_000_001, -1, 0.5],
  runAt: ['2024-01-01T00:00:00Z', '2024-01-01T00:00:00.123+02:00', '2024-02-30T00:00:00Z', '2024-01-01', '2024-01-01T25:00:00Z', 'yesterday', '2024-13-01T00:00:00Z', '+275760-09-13T00:00:00Z'],
  maxAttempts: [0, 1, 100, 101, 3.5],
  timeoutMs: [0, 1, 86_400_000, 86_400_001],
  idempotencyKey: ['k', 'k'.repeat(255), 'k'.repeat(256), '\uFE0F', 'k\uFE0F', '\uD83D\uDE00'.repeat(255), '\uD83D\uDE00'.repeat(256), 'a\uFE0F'.repeat(255) + 'a', 'a\uFE0F'.repeat(200)],
  concurrencyKey: ['c', 'c'.repeat(128), 'c'.repeat(129), 'x\u0000', '\uD800', '\uDC00x', '\uD83D\uDE00'],
  backoff: [
    {},
    { type: 'fixed' },
    { type: 'exponential', delayMs: 0, maxDelayMs: 1000, jitter: 'full' },
    { type: 'cubic' },
    { delayMs: -1 },
    { maxDelayMs: 1.5 },
    { jitter: 'some' },
    { extra: 1 },
    { constructor: 1 },
    { type: null },
  ],
  debounce: [
    { key: 'k', windowMs: 100 },
    { key: 'k', windowMs: 99 },
    { key: 'k', windowMs: 86_400_000, maxWaitMs: 604_800_000 },
    { key: 'k', windowMs: 1000, maxWaitMs: 999 },
    { key: 'k', windowMs: 1000, maxWaitMs: 1000 },
    { key: 'k', windowMs: 50, maxWaitMs: 100 },
    { key: 'k', windowMs: 50, maxWaitMs: 99 },
    { key: 'k', windowMs: 1.5, maxWaitMs: 100 },
    { key: 'k', windowMs: 1000, maxWaitMs: 604_800_001 },
    { key: 'k', windowMs: 1000, maxWaitMs: null },
    { key: 'k', windowMs: 1000, maxWaitMs: '2000' },
    { key: '', windowMs: 100 },
    { windowMs: 100 },
    { key: 'k' },
    {},
    { key: 'k', windowMs: 100, extra: 1 },
  ],
};

describe('the compiled enqueue validator agrees with the DTO (class-validator) rules', () => {
  it('on every listed value of every field, and on the odd values of every JSON type', () => {
    let accepted = 0;
    for (const [field, values] of Object.entries(FIELDS)) {
      for (const v of [...values, ...ODD]) {
        const body = field === 'type' ? { type: v } : { type: 't', [field]: v };
        const fast = isValidJobBody(body);
        if (fast !== dtoAccepts(body)) throw new Error(`disagree on ${JSON.stringify(body)}: compiled ${fast}`);
        if (fast) accepted++;
      }
    }
    expect(accepted).toBeGreaterThan(40); // the valid ones are accepted too, not only the bad ones refused
  });

  it('on whole bodies: missing type, unknown and own `constructor` keys, nulls, non-objects', () => {
    const bodies: unknown[] = [{}, { payload: {} }, { type: 't', extra: 1 }, { type: 't', constructor: 1 }, { type: 't', payload: null }, null, [], 'x', 7, [{ type: 't' }]];
    bodies.push(JSON.parse('{"type":"t","constructor":{"a":1}}'));
    for (const b of bodies) expect([JSON.stringify(b), isValidJobBody(b)]).toEqual([JSON.stringify(b), dtoAccepts(b)]);
  });

  it('on generated bodies (fast-check): the same answer for each', () => {
    const field = (k: string) => fc.oneof(fc.constantFrom(...FIELDS[k]), fc.constantFrom(...ODD), fc.jsonValue());
    const body = fc.record(
      Object.fromEntries([...Object.keys(FIELDS), 'extra'].map((k) => [k, k === 'extra' ? fc.jsonValue() : field(k)])),
      { requiredKeys: [] },
    );
    fc.assert(
      fc.property(body, (b) => isValidJobBody(b) === dtoAccepts(b)),
      { numRuns: 3000 },
    );
  });

  it('batches: 1..1000 jobs, each checked, nothing else in the body', () => {
    const job = { type: 't' };
    const cases: unknown[] = [
      { jobs: [job] },
      { jobs: Array(1000).fill(job) },
      { jobs: Array(1001).fill(job) },
      { jobs: [] },
      { jobs: [job, { type: 't', priority: 101 }] },
      { jobs: [job, null] },
      { jobs: [job, [job]] },
      { jobs: [job, 'x'] },
      { jobs: job },
      { jobs: null },
      {},
      { jobs: [job], extra: 1 },
      { jobs: [job], constructor: 1 },
      [job],
      null,
    ];
    for (const b of cases) expect([JSON.stringify(b).slice(0, 80), isValidBatchBody(b)]).toEqual([JSON.stringify(b).slice(0, 80), dtoAcceptsBatch(b)]);
  });

  it('the pipes return an accepted body as it is, and refuse the others with the details of before', () => {
    const body = { type: 't', payload: { a: 1 }, backoff: { type: 'fixed' } };
    expect(new EnqueueJobPipe().transform(body)).toBe(body);
    const batch = { jobs: [body] };
    expect(new EnqueueBatchPipe().transform(batch)).toBe(batch);
    expect(() => new EnqueueBatchPipe().transform({ jobs: [body, { type: 't', priority: null }] })).toThrow(
      expect.objectContaining({ details: [{ path: 'jobs.1.priority', message: 'must not be null' }] }),
    );
  });
});
