import { ValidationError } from './errors';
import { FLOW_LIMITS, normalizeFlow } from './flow-graph';
import { PayloadTooLargeError } from './job-options';

const MAX = 524_288;

/** Runs normalizeFlow expecting a ValidationError; returns its details. */
function details(input: unknown): { path: string; message: string }[] {
  try {
    normalizeFlow(input, MAX);
  } catch (e) {
    expect(e).toBeInstanceOf(ValidationError);
    expect(e).not.toBeInstanceOf(PayloadTooLargeError);
    return (e as ValidationError).details;
  }
  throw new Error('expected a ValidationError');
}
const paths = (input: unknown) => details(input).map((d) => d.path);
const job = (ref: string, dependsOn?: string[], extra: Record<string, unknown> = {}) => ({ ref, type: 't', ...(dependsOn ? { dependsOn } : {}), ...extra });

describe('normalizeFlow: valid graphs', () => {
  it('orders a diamond and fills dependents', () => {
    const { jobs, order } = normalizeFlow({ jobs: [job('d', ['b', 'c']), job('c', ['a']), job('b', ['a']), job('a')] }, MAX);
    expect(order).toEqual(['a', 'c', 'b', 'd']);
    const byRef = Object.fromEntries(jobs.map((j) => [j.ref, j]));
    expect(byRef.a).toMatchObject({ dependsOn: [], dependents: ['c', 'b'], index: 3 });
    expect(byRef.d).toMatchObject({ dependsOn: ['b', 'c'], dependents: [], index: 0 });
    expect(byRef.b).toMatchObject({ dependsOn: ['a'], dependents: ['d'] });
  });

  it('orders a diamond sent in request order: a, b, c, d', () => {
    const { jobs, order } = normalizeFlow({ jobs: [job('a'), job('b', ['a']), job('c', ['a']), job('d', ['b', 'c'])] }, MAX);
    expect(order).toEqual(['a', 'b', 'c', 'd']);
    expect(jobs.map((j) => j.dependents)).toEqual([['b', 'c'], ['d'], ['d'], []]);
  });

  it('keeps the normalized enqueue fields, across two queues', () => {
    const { jobs } = normalizeFlow(
      { jobs: [job('x', undefined, { queue: 'emails', priority: 'high', payload: { to: 'a' } }), job('y', ['x'], { queue: 'reports', delayMs: 5 })] },
      MAX,
    );
    expect(jobs[0]).toMatchObject({ ref: 'x', queue: 'emails', type: 't', priority: 10, payloadJson: '{"to":"a"}', onDependencyFailure: 'cancel' });
    expect(jobs[1]).toMatchObject({ ref: 'y', queue: 'reports', delayMs: 5, dependsOn: ['x'] });
  });

  it('onDependencyFailure defaults to cancel and accepts run', () => {
    const { jobs } = normalizeFlow({ jobs: [job('a'), job('b', ['a'], { onDependencyFailure: 'run' })] }, MAX);
    expect(jobs.map((j) => j.onDependencyFailure)).toEqual(['cancel', 'run']);
  });

  it('accepts the edge refs of the pattern, __proto__ included', () => {
    const long = 'r'.repeat(64);
    const { order } = normalizeFlow({ jobs: [job('__proto__'), job(long, ['__proto__']), job('a.b:c-d_e', [long])] }, MAX);
    expect(order).toEqual(['__proto__', long, 'a.b:c-d_e']);
  });
});

describe('normalizeFlow: the body', () => {
  it.each([null, [], 'x', 3])('refuses a body that is not an object: %p', (body) => {
    expect(details(body)).toEqual([{ path: '', message: 'must be a JSON object' }]);
  });

  it.each([{}, { jobs: {} }, { jobs: [] }])('refuses missing, non-array or empty jobs: %p', (body) => {
    expect(paths(body)).toEqual(['jobs']);
  });

  it('accepts 1,000 jobs and refuses 1,001', () => {
    const many = (n: number) => ({ jobs: Array.from({ length: n }, (_, i) => job(`j${i}`)) });
    expect(normalizeFlow(many(FLOW_LIMITS.maxJobs), MAX).jobs).toHaveLength(1000);
    expect(paths(many(1001))).toEqual(['jobs']);
  });

  it('refuses a job that is not an object', () => {
    expect(paths({ jobs: [job('a'), 'b'] })).toEqual(['jobs.1']);
  });
});

describe('normalizeFlow: refs and dependsOn', () => {
  it('refuses a missing or malformed ref', () => {
    expect(paths({ jobs: [{ type: 't' }, job('a b'), job('r'.repeat(65)), job('')] })).toEqual(['jobs.0.ref', 'jobs.1.ref', 'jobs.2.ref', 'jobs.3.ref']);
  });

  it('refuses an unknown ref, naming it', () => {
    expect(details({ jobs: [job('a'), job('b', ['a', 'zz'])] })).toEqual([{ path: 'jobs.1.dependsOn.1', message: 'unknown ref "zz"' }]);
  });

  it('refuses a self-reference', () => {
    expect(details({ jobs: [job('a', ['a'])] })).toEqual([{ path: 'jobs.0.dependsOn.0', message: 'self-reference: "a" cannot depend on itself' }]);
  });

  it('refuses a duplicate ref at its second use', () => {
    expect(details({ jobs: [job('a'), job('b'), job('a')] })).toEqual([{ path: 'jobs.2.ref', message: 'duplicate ref "a" (first at jobs.0)' }]);
  });

  it('refuses a duplicate inside one dependsOn', () => {
    expect(details({ jobs: [job('a'), job('b', ['a', 'a'])] })).toEqual([{ path: 'jobs.1.dependsOn.1', message: 'duplicate ref "a" in dependsOn' }]);
  });

  it('refuses a dependsOn that is not an array of refs, or too long', () => {
    expect(paths({ jobs: [job('a'), { ...job('b'), dependsOn: 'a' }, job('c', [3 as unknown as string, 'a b'])] })).toEqual([
      'jobs.1.dependsOn',
      'jobs.2.dependsOn.0',
      'jobs.2.dependsOn.1',
    ]);
    const long = Array.from({ length: FLOW_LIMITS.maxDependsOn + 1 }, () => 'a');
    expect(details({ jobs: [job('a'), job('b', long)] })).toEqual([{ path: 'jobs.1.dependsOn', message: 'must list at most 1000 refs' }]);
  });

  it('refuses a flow of more than 20,000 dependencies in all, before reading them; a 999-child fan-in and 20 dependencies a job pass', () => {
    const refs = Array.from({ length: 1000 }, (_, i) => `j${i}`);
    // Each job after the 25th depends on the 25 before it: 24,375 edges.
    const dense = refs.map((r, i) => job(r, i >= 25 ? refs.slice(i - 25, i) : undefined));
    expect(details({ jobs: dense })).toEqual([{ path: 'jobs', message: 'must hold at most 20000 dependencies in all (dependsOn entries); this flow has 24375' }]);
    const fanIn = [...refs.slice(0, 999).map((r) => job(r)), job('parent', refs.slice(0, 999))];
    expect(normalizeFlow({ jobs: fanIn }, MAX).jobs).toHaveLength(1000);
    const twenty = refs.map((r, i) => job(r, i >= 20 ? refs.slice(i - 20, i) : undefined));
    expect(normalizeFlow({ jobs: twenty }, MAX).jobs).toHaveLength(1000);
  });

  it('refuses an invalid onDependencyFailure', () => {
    expect(details({ jobs: [job('a', undefined, { onDependencyFailure: 'ignore' })] })).toEqual([{ path: 'jobs.0.onDependencyFailure', message: 'must be "cancel" or "run"' }]);
  });
});

describe('normalizeFlow: cycles', () => {
  it('names the refs of a 3-cycle in cycle order, once per ref', () => {
    // b depends on a, c on b, a on c: starting at the first sent (c), c → b → a → c.
    const d = details({ jobs: [job('c', ['b']), job('a', ['c']), job('b', ['a'])] });
    const message = 'cycle: c → b → a → c';
    expect(d).toEqual([
      { path: 'jobs.0.dependsOn', message },
      { path: 'jobs.2.dependsOn', message },
      { path: 'jobs.1.dependsOn', message },
    ]);
  });

  it('reports only the refs of a 2-cycle, not the valid part nor what waits for the cycle', () => {
    const d = details({ jobs: [job('ok1'), job('ok2', ['ok1']), job('after', ['x', 'ok2']), job('x', ['y', 'ok1']), job('y', ['x'])] });
    expect(d).toEqual([
      { path: 'jobs.3.dependsOn', message: 'cycle: x → y → x' },
      { path: 'jobs.4.dependsOn', message: 'cycle: x → y → x' },
    ]);
  });

  it('starts the message at the ref of the cycle sent first, wherever the walk entered it', () => {
    // The walk from w enters the cycle at b; a was sent before b.
    expect(details({ jobs: [job('w', ['b']), job('a', ['b']), job('b', ['a'])] })).toEqual([
      { path: 'jobs.1.dependsOn', message: 'cycle: a → b → a' },
      { path: 'jobs.2.dependsOn', message: 'cycle: a → b → a' },
    ]);
  });

  it('names every ref of a 10-cycle', () => {
    const jobs = Array.from({ length: 10 }, (_, i) => job(`j${i}`, [`j${(i + 1) % 10}`]));
    expect(details({ jobs })[0].message).toBe('cycle: j0 → j1 → j2 → j3 → j4 → j5 → j6 → j7 → j8 → j9 → j0');
  });

  it('reports two disjoint cycles', () => {
    expect(paths({ jobs: [job('a', ['b']), job('b', ['a']), job('c', ['d']), job('d', ['c'])] }).sort()).toEqual(['jobs.0.dependsOn', 'jobs.1.dependsOn', 'jobs.2.dependsOn', 'jobs.3.dependsOn']);
  });
});

describe('normalizeFlow: job fields, all or nothing', () => {
  it('one invalid job refuses the whole flow with its path', () => {
    expect(details({ jobs: [job('a'), job('b', ['a']), { ref: 'c', type: 'bad type' }] })).toEqual([{ path: 'jobs.2.type', message: 'must match ^[A-Za-z0-9_.:-]{1,128}$' }]);
  });

  it('collects the problems of several jobs, fields and graph together', () => {
    const d = paths({ jobs: [job('a', undefined, { priority: 1000 }), job('b', ['zz'], { queue: 'Bad' }), { ref: 'c', type: 't', delayMs: -1, maxAttempts: 0 }] });
    expect(d.sort()).toEqual(['jobs.0.priority', 'jobs.1.dependsOn.0', 'jobs.1.queue', 'jobs.2.delayMs', 'jobs.2.maxAttempts']);
  });

  it('still finds a cycle when other fields are bad', () => {
    expect(paths({ jobs: [job('a', ['b'], { timeoutMs: 0 }), job('b', ['a'])] })).toEqual(['jobs.0.timeoutMs', 'jobs.0.dependsOn', 'jobs.1.dependsOn']);
  });

  it('refuses debounce and idempotencyKey (once each, without their own field checks)', () => {
    const d = details({ jobs: [job('a', undefined, { debounce: { key: '', windowMs: 1 } }), job('b', undefined, { idempotencyKey: 'k' })] });
    expect(d.map((x) => x.path)).toEqual(['jobs.0.debounce', 'jobs.1.idempotencyKey']);
    expect(d[0].message).toMatch(/merged into another job/);
  });

  it('a payload over the limit is a PayloadTooLargeError naming the job', () => {
    const body = { jobs: [job('a'), job('b', undefined, { payload: { s: 'x'.repeat(100) } })] };
    expect(() => normalizeFlow(body, 50)).toThrow(PayloadTooLargeError);
    expect(() => normalizeFlow(body, 50)).toThrow(/^jobs\.1: payload larger than 50 bytes$/);
  });

  it('ignores fields unknown to POST /jobs, as normalizeEnqueue does', () => {
    expect(normalizeFlow({ jobs: [job('a', undefined, { colour: 'red' })] }, MAX).jobs[0]).not.toHaveProperty('colour');
  });
});

describe('normalizeFlow: linear in jobs + edges', () => {
  it('orders a 1,000-job chain sent backwards', () => {
    const n = 1000;
    const jobs = Array.from({ length: n }, (_, i) => job(`j${n - 1 - i}`, i === n - 1 ? undefined : [`j${n - 2 - i}`]));
    const { order } = normalizeFlow({ jobs }, MAX);
    expect(order).toEqual(Array.from({ length: n }, (_, i) => `j${i}`));
  });

  it('a 1,000-job cycle is reported on every ref', () => {
    const n = 1000;
    const jobs = Array.from({ length: n }, (_, i) => job(`j${i}`, [`j${(i + 1) % n}`]));
    const d = details({ jobs });
    expect(d).toHaveLength(n);
    // The message is on every ref: it names the first 10 and the length, not all 1,000.
    expect(new Set(d.map((x) => x.message))).toEqual(new Set(['cycle of 1000 refs: j0 → j1 → j2 → j3 → j4 → j5 → j6 → j7 → j8 → j9 → … → j0']));
  });

  it('validates a fan-in: one job waiting for 999 parents', () => {
    const parents = Array.from({ length: 999 }, (_, i) => job(`p${i}`));
    const { jobs, order } = normalizeFlow({ jobs: [job('child', parents.map((p) => p.ref)), ...parents] }, MAX);
    expect(order[999]).toBe('child');
    expect(jobs[0].dependsOn).toHaveLength(999);
    expect(jobs[1].dependents).toEqual(['child']);
  });

  it('validates a fan-out: 999 children of one parent', () => {
    const children = Array.from({ length: 999 }, (_, i) => job(`c${i}`, ['root']));
    const { jobs, order } = normalizeFlow({ jobs: [...children, job('root')] }, MAX);
    expect(order[0]).toBe('root');
    expect(order.slice(1)).toEqual(children.map((c) => c.ref));
    expect(jobs[999].dependents).toHaveLength(999);
  });
});
