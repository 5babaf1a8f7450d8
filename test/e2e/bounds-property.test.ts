import fc from 'fast-check';
import { waitForMirror } from '../../src/history/mirror-barrier';
import { type RedisStores } from '../../src/redis/stores';
import { REDIS_STORES } from '../../src/redis/redis.module';
import { startTestApi, TestApi } from '../support/http';

/**
 * Property test of the bounds (docs/configuration.md, "Limits"): arbitrary JSON, heavy on
 * numbers at and past every bound (huge, negative, fractional, exponent
 * forms), wrong types, nulls and nested objects, sent to `POST /jobs`,
 * `POST /jobs/batch` and `PUT /queues/:name` of a full stack (api, worker,
 * audit). Every answer is 2xx or a 4xx envelope, never 5xx; an accepted job
 * reads back with GET; and after each accepted body the history mirror has
 * caught up within 1 s (a value that broke the writer's batch would stop it).
 * Deterministic: seed FC_SEED (default below), printed by fast-check on failure;
 * runs FC_RUNS (default 200).
 */
const SEED = Number(process.env.FC_SEED ?? 20261201);
const RUNS = Number(process.env.FC_RUNS ?? 200);
const QUEUES = ['prop-a', 'prop-b'];
const MIRROR_MS = 1000;

const bound = [0, -0, 1, -1, 100, 101, -100, -101, 1000, 1001, 30_000, 30_001, 100_000, 100_001, 1_000_000, 1_000_001, 86_400_000, 86_400_001, 31_536_000_000, 31_536_000_001];
const absurd = [2 ** 31, 2 ** 31 - 1, 2 ** 53, 2 ** 53 + 2, 2 ** 63, 9e15, 8.64e15, 1e19, 1e20, 1e21, 1e308, -1e19, -1e308, 5e-324, 0.5, -0.5, 1.5e3];
const num = fc.oneof(
  { weight: 6, arbitrary: fc.constantFrom(...bound, ...absurd) },
  { weight: 2, arbitrary: fc.integer({ min: -1_000_000, max: 1_000_000 }) },
  { weight: 1, arbitrary: fc.double({ noNaN: true, noDefaultInfinity: true }) },
  { weight: 1, arbitrary: fc.maxSafeInteger() },
);
const any: fc.Arbitrary<unknown> = fc.oneof(
  { weight: 4, arbitrary: num },
  { weight: 1, arbitrary: fc.constant(null) },
  { weight: 1, arbitrary: fc.boolean() },
  { weight: 1, arbitrary: fc.string({ maxLength: 12 }) },
  { weight: 1, arbitrary: fc.constantFrom('1e20', '100', 'high', 'fixed', '2026-12-01T00:00:00Z', '') },
  { weight: 1, arbitrary: fc.jsonValue({ maxDepth: 2 }) },
  { weight: 1, arbitrary: fc.array(num, { maxLength: 3 }) },
);
/** An integer in [min, max], the bounds themselves often. */
const numIn = (min: number, max: number) => fc.oneof(fc.bigInt({ min: BigInt(min), max: BigInt(max) }).map(Number), fc.constantFrom(min, max));
const iso = fc.oneof(
  fc.date({ min: new Date(-8.64e15), max: new Date(8.64e15), noInvalidDate: true }).map((d) => d.toISOString()),
  fc.date({ min: new Date(0), max: new Date('9999-12-31T23:59:59.999Z'), noInvalidDate: true }).map((d) => d.toISOString()),
  fc.constantFrom('9999-12-31T23:59:59.999Z', '1969-12-31T23:59:59.999Z', '+275760-09-13T00:00:00.000Z', 'not a date'),
);
const YEAR = 31_536_000_000;
const backoff = fc
  .record({ type: fc.constantFrom('fixed', 'linear', 'exponential'), delayMs: numIn(0, YEAR), maxDelayMs: numIn(0, YEAR), jitter: fc.constantFrom('none', 'full', 'equal') }, { requiredKeys: [] })
  .map((b) => (b.delayMs !== undefined && b.maxDelayMs !== undefined && b.maxDelayMs < b.delayMs ? { ...b, maxDelayMs: b.delayMs } : b));
/**
 * Replaces 0..2 fields of a (mostly valid) body with an out-of-range number
 * or anything: a body wrong in one place is what finds a missing bound (the
 * rest of it passes, so the bad value gets in).
 */
const mutate = <T extends Record<string, unknown>>(base: fc.Arbitrary<T>, keys: string[]) =>
  fc
    .tuple(base, fc.oneof(fc.constant([]), fc.array(fc.tuple(fc.constantFrom(...keys), fc.oneof({ weight: 3, arbitrary: num }, { weight: 1, arbitrary: any })), { minLength: 1, maxLength: 2 })))
    .map(([b, muts]) => {
      const out: Record<string, unknown> = { ...b };
      for (const [k, v] of muts) {
        const [outer, inner] = k.split('.');
        // 'both' sets delayMs and maxDelayMs alike (so maxDelayMs ≥ delayMs holds and only the size is wrong).
        const obj = (x: unknown) => (typeof x === 'object' && x !== null ? (x as Record<string, unknown>) : {});
        if (inner === 'backoffBoth') out[outer] = { ...obj(out[outer]), backoff: { ...obj(obj(out[outer]).backoff), delayMs: v, maxDelayMs: v } };
        else if (inner === 'both') out[outer] = { ...(typeof out[outer] === 'object' && out[outer] !== null ? (out[outer] as object) : {}), delayMs: v, maxDelayMs: v };
        else if (inner) out[outer] = { ...(typeof out[outer] === 'object' && out[outer] !== null ? (out[outer] as object) : {}), [inner]: v };
        else out[outer] = v;
      }
      return out;
    });
/** A job body: each optional field sent or not, each mostly valid. */
const validJob = fc
  .record({
    type: fc.constantFrom('diag.echo', 'diag.fail'),
    payload: fc.oneof(fc.constant({ times: 1 }), fc.constant({}), fc.dictionary(fc.string({ maxLength: 4 }), fc.jsonValue({ maxDepth: 2 }), { maxKeys: 3 })),
    queue: fc.constantFrom(...QUEUES),
    priority: numIn(-100, 100),
    delayMs: fc.oneof(fc.constant(0), numIn(0, YEAR)),
    runAt: iso,
    maxAttempts: numIn(1, 100),
    backoff,
    timeoutMs: numIn(1, 86_400_000),
    idempotencyKey: fc.string({ minLength: 1, maxLength: 8 }),
    present: fc.array(fc.boolean(), { minLength: 10, maxLength: 10 }),
  })
  // Each optional field is sent with probability 1/2 (runAt 1/4: it excludes delayMs).
  .map(({ present, ...f }) => {
    const keys = Object.keys(f) as (keyof typeof f)[];
    return Object.fromEntries(keys.filter((k, i) => k === 'type' || (present[i] && (k !== 'runAt' || !present[4]))).map((k) => [k, f[k]]));
  });
const jobBody = mutate(validJob, ['priority', 'delayMs', 'runAt', 'maxAttempts', 'timeoutMs', 'backoff', 'backoff.delayMs', 'backoff.maxDelayMs', 'backoff.both', 'backoff.both', 'payload', 'type']);
const queueBody = mutate(
  fc.record(
    {
      maxConcurrency: fc.oneof(numIn(1, 100_000), fc.constant(null)),
      rateLimit: fc.oneof({ weight: 3, arbitrary: fc.record({ max: numIn(1, 1_000_000), durationMs: numIn(1, 86_400_000) }) }, { weight: 1, arbitrary: fc.constant(null) }),
      defaults: fc.record({ maxAttempts: numIn(1, 100), backoff, timeoutMs: numIn(1, 86_400_000) }, { requiredKeys: [] }),
      external: fc.oneof({ weight: 6, arbitrary: fc.constant(false) }, { weight: 1, arbitrary: fc.constant(true) }),
    },
    { requiredKeys: [] },
  ),
  ['maxConcurrency', 'rateLimit', 'rateLimit.max', 'rateLimit.durationMs', 'defaults', 'defaults.maxAttempts', 'defaults.timeoutMs', 'defaults.backoff', 'defaults.backoffBoth', 'defaults.backoffBoth', 'external'],
);
/** Fields of a job or queue object (as the API answers it) outside the bounds of docs/configuration.md "Limits", as `path=value`. */
function outOfBounds(o: any): string[] {
  const out: string[] = [];
  const check = (path: string, v: unknown, min: number, max: number) => {
    if (v !== undefined && v !== null && !(typeof v === 'number' && Number.isInteger(v) && v >= min && v <= max)) out.push(`${path}=${JSON.stringify(v)}`);
  };
  const backoffOf = (path: string, b: any) => {
    check(`${path}.delayMs`, b?.delayMs, 0, YEAR);
    check(`${path}.maxDelayMs`, b?.maxDelayMs, 0, YEAR);
  };
  if ('counts' in o) {
    check('maxConcurrency', o.maxConcurrency, 1, 100_000);
    check('rateLimit.max', o.rateLimit?.max, 1, 1_000_000);
    check('rateLimit.durationMs', o.rateLimit?.durationMs, 1, 86_400_000);
    check('defaults.maxAttempts', o.defaults?.maxAttempts, 1, 100);
    check('defaults.timeoutMs', o.defaults?.timeoutMs, 1, 86_400_000);
    backoffOf('defaults.backoff', o.defaults?.backoff);
  } else {
    check('priority', o.priority, -100, 100);
    check('maxAttempts', o.maxAttempts, 1, 100);
    check('timeoutMs', o.timeoutMs, 1, 86_400_000);
    backoffOf('backoff', o.backoff);
    const runAt = Date.parse(o.runAt);
    if (!(runAt <= Date.parse(o.createdAt) + YEAR || runAt <= Date.parse('9999-12-31T23:59:59.999Z'))) out.push(`runAt=${o.runAt}`);
  }
  return out;
}

type Call = { kind: 'job'; body: unknown } | { kind: 'batch'; body: unknown } | { kind: 'queue'; name: string; body: unknown };
const call: fc.Arbitrary<Call> = fc.oneof(
  { weight: 3, arbitrary: fc.oneof({ weight: 5, arbitrary: jobBody }, { weight: 1, arbitrary: any }).map((body) => ({ kind: 'job' as const, body })) },
  { weight: 1, arbitrary: fc.oneof({ weight: 5, arbitrary: fc.record({ jobs: fc.array(jobBody, { minLength: 1, maxLength: 4 }) }) }, { weight: 1, arbitrary: any }).map((body) => ({ kind: 'batch' as const, body })) },
  { weight: 2, arbitrary: fc.tuple(fc.constantFrom(...QUEUES), fc.oneof({ weight: 5, arbitrary: queueBody }, { weight: 1, arbitrary: any })).map(([name, body]) => ({ kind: 'queue' as const, name, body })) },
);

describe('bounds: property test over the enqueue and queue-config bodies (e2e)', () => {
  let api: TestApi;
  let store: RedisStores;
  beforeAll(async () => {
    api = await startTestApi('e2e-bounds-prop', { ROLE: 'api,worker,audit', WORKER_CONCURRENCY: '4' });
    store = api.app.get<RedisStores>(REDIS_STORES);
  });
  afterAll(async () => {
    await api?.close();
  });

  it(`never answers 5xx, lets nothing out of bounds in, and the mirror catches up within ${MIRROR_MS} ms after each accepted body (${RUNS} runs, seed ${SEED})`, async () => {
    const lags: number[] = [];
    const accepted: string[] = [];
    /** Every queue written to so far: a poisoned event of an earlier body would hold its queue's mirror back. */
    const mirrorCaughtUp = async () => {
      const started = Date.now();
      const caughtUp = await waitForMirror(store.mirror, [...QUEUES, 'default'], MIRROR_MS);
      const lag = Date.now() - started;
      lags.push(lag);
      expect({ caughtUp, lagUnder1s: lag < MIRROR_MS }).toEqual({ caughtUp: true, lagUnder1s: true });
    };
    const statuses = new Map<number, number>();
    await fc.assert(
      fc.asyncProperty(call, async (c) => {
        const req = c.kind === 'queue' ? api.http.put(`/queues/${c.name}`) : api.http.post(c.kind === 'job' ? '/jobs' : '/jobs/batch');
        const res = await req.set('content-type', 'application/json').send(JSON.stringify(c.body ?? null));
        statuses.set(res.status, (statuses.get(res.status) ?? 0) + 1);
        expect(res.status).toBeLessThan(500);
        if (res.status >= 400) {
          expect(typeof res.body.error?.code).toBe('string');
          return;
        }
        // What got in is within the documented bounds (docs/configuration.md, "Limits").
        if (c.kind === 'queue') expect(outOfBounds(res.body)).toEqual([]);
        else for (const j of c.kind === 'job' ? [res.body] : res.body.jobs) expect(outOfBounds(j)).toEqual([]);
        const jobs: { id: string }[] = c.kind === 'job' ? [res.body] : c.kind === 'batch' ? res.body.jobs : [];
        accepted.push(...jobs.map((j) => j.id));
        // The new jobs and the last few before them (run or retried meanwhile) read back.
        for (const id of accepted.slice(-jobs.length - 5)) expect([id, (await api.http.get(`/jobs/${id}`)).status]).toEqual([id, 200]);
        await mirrorCaughtUp();
      }),
      { numRuns: RUNS, seed: SEED, endOnFailure: true },
    );
    // Once the jobs have run (and retried), every one still reads back and the mirror still keeps up.
    await new Promise((r) => setTimeout(r, 1500));
    for (const id of accepted) expect([id, (await api.http.get(`/jobs/${id}`)).status]).toEqual([id, 200]);
    await mirrorCaughtUp();
    lags.sort((a, b) => a - b);
    // Figures for the report: how the answers spread, and the mirror's catch-up time.
    console.log(`statuses ${JSON.stringify(Object.fromEntries(statuses))}; mirror catch-up after ${lags.length} accepted bodies: p50 ${lags[Math.floor(lags.length / 2)]} ms, max ${lags[lags.length - 1]} ms`);
    // The mix holds accepted and refused bodies both.
    expect([...statuses.keys()].some((s) => s < 300)).toBe(true);
    expect([...statuses.keys()].some((s) => s === 400)).toBe(true);
  });
});
