import { JobNotFoundError, UnavailableError } from '../../src/core/errors';
import { JobStore } from '../../src/core/ports';
import { FlowRecordStore } from '../../src/core/ports/flows';
import { normalizeFlow } from '../../src/core/flow-graph';
import { REDIS_STORES } from '../../src/redis/redis.module';
import type { RedisStores } from '../../src/redis/stores';
import { SluiceClient } from '../../clients/typescript/src';
import { startTestApi, type TestApi } from '../support/http';
import { waitUntil } from '../support/timing';

/**
 * POST /flows under retries (API.md v1.3, third probe): the flow's own
 * `idempotencyKey` (taken before anything is written, so a retry while the
 * first request still runs finds it), the 503s naming the flow id and saying
 * truthfully whether it may exist (a rollback that cannot confirm the jobs
 * are gone — Redis lost a created one — never says "nothing was kept"), the
 * answer deadline's 503 naming the flow, and `dependsOn: null` refused.
 * Real Redis and PostgreSQL; failures injected into the job store.
 */
const DEADLINE_MS = 3000;

describe('POST /flows: idempotencyKey and truthful 503s', () => {
  let api: TestApi;
  let stores: RedisStores;
  let store: JobStore;

  beforeAll(async () => {
    api = await startTestApi('e2e-flowidem', { ROLE: 'api,scheduler,audit', HTTP_ANSWER_TIMEOUT_MS: String(DEADLINE_MS) });
    stores = api.app.get<RedisStores>(REDIS_STORES);
    store = api.app.get(JobStore);
    for (const q of ['fi-a', 'fi-b']) expect((await api.http.put(`/queues/${q}`).send({ external: true })).status).toBe(200);
  });
  /** Gates of holdEnqueue still closed: a test that fails midway leaves none behind. */
  const holds: (() => void)[] = [];
  afterEach(() => {
    holds.splice(0).forEach((release) => release());
    jest.restoreAllMocks();
  });
  afterAll(async () => {
    await api?.close();
  });

  const jobs = (tag: string) => [
    { ref: 'a', type: 't', queue: 'fi-a', payload: { tag } },
    { ref: 'b', type: 't', queue: 'fi-b', dependsOn: ['a'] },
    { ref: 'c', type: 't', queue: 'fi-a', dependsOn: ['a', 'b'], onDependencyFailure: 'run' },
  ];
  /** Flow records of the test's prefix. */
  const records = async () => {
    const out: string[] = [];
    let cursor = '0';
    do {
      const [next, batch] = await stores.ctx.redis.scan(cursor, 'MATCH', `${api.prefix}:{flow:*}:meta`, 'COUNT', 1000);
      cursor = next;
      out.push(...batch);
    } while (cursor !== '0');
    return out.length;
  };
  /** Holds the job store's enqueue until released (the submission stays midway). */
  const holdEnqueue = () => {
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const real = store.enqueue.bind(store);
    const spy = jest.spyOn(store, 'enqueue').mockImplementation(async (...args) => {
      await gate;
      return real(...args);
    });
    const done = () => (release(), spy.mockRestore());
    holds.push(done);
    return { release: done };
  };

  it('the same key and body: 201, then 200 with the same flow and Idempotent-Replayed; another body: 409, nothing written', async () => {
    const first = await api.http.post('/flows').send({ idempotencyKey: 'k-same', jobs: jobs('x') });
    expect(first.status).toBe(201);
    expect(first.headers['idempotent-replayed']).toBeUndefined();
    const again = await api.http.post('/flows').send({ idempotencyKey: 'k-same', jobs: jobs('x') });
    expect(again.status).toBe(200);
    expect(again.headers['idempotent-replayed']).toBe('true');
    expect(again.body.flowId).toBe(first.body.flowId);
    const brief = (b: any) => b.jobs.map((j: any) => ({ id: j.id, ref: j.ref, dependsOn: j.dependsOn, status: j.status, payload: j.payload, flowId: j.flowId }));
    expect(brief(again.body)).toEqual(brief(first.body));
    const before = await records();
    const other = await api.http.post('/flows').send({ idempotencyKey: 'k-same', jobs: jobs('y') });
    expect([other.status, other.body.error.code]).toEqual([409, 'conflict']);
    expect(other.body.error.message).toContain('k-same');
    expect(await records()).toBe(before);
    // Without a key, the same body makes another flow, as before.
    const plain = await api.http.post('/flows').send({ jobs: jobs('x') });
    expect(plain.status).toBe(201);
    expect(plain.body.flowId).not.toBe(first.body.flowId);
  });

  it('a retry while the first request is still submitting: 503 naming that flow, never a second one; then 200 with it', async () => {
    const before = await records();
    const hold = holdEnqueue();
    const firstP = api.http.post('/flows').send({ idempotencyKey: 'k-running', jobs: jobs('r') }).then((r) => r);
    // The first has claimed the key and written its record; its enqueue waits.
    await waitUntil('the first flow recorded', async () => (await records()) === before + 1, 10_000);
    const retry = await api.http.post('/flows').send({ idempotencyKey: 'k-running', jobs: jobs('r') });
    expect([retry.status, retry.body.error.code]).toEqual([503, 'unavailable']);
    expect(retry.headers['retry-after']).toBe('1');
    expect(retry.body.error.details).toEqual([{ path: 'flowId', message: expect.stringMatching(/^[0-9a-f-]{36}$/) }]);
    expect(retry.body.error.message).toMatch(/not completely submitted: an earlier request may still be submitting it/);
    hold.release();
    const first = await firstP;
    expect(first.status).toBe(201);
    expect(retry.body.error.details[0].message).toBe(first.body.flowId);
    const later = await api.http.post('/flows').send({ idempotencyKey: 'k-running', jobs: jobs('r') });
    expect([later.status, later.body.flowId, later.headers['idempotent-replayed']]).toEqual([200, first.body.flowId, 'true']);
    expect(await records()).toBe(before + 1);
  });

  it('concurrent requests with one key: one flow, every answer names it', async () => {
    const before = await records();
    const answers = await Promise.all(Array.from({ length: 6 }, () => api.http.post('/flows').send({ idempotencyKey: 'k-race', jobs: jobs('c') })));
    const ids = answers.map((r) => (r.status === 503 ? r.body.error.details[0].message : r.body.flowId));
    expect(answers.filter((r) => r.status === 201)).toHaveLength(1);
    for (const r of answers) expect([200, 201, 503]).toContain(r.status);
    expect(new Set(ids).size).toBe(1);
    expect(await records()).toBe(before + 1);
  });

  it('the answer deadline while the flow is submitted: 503 naming the flow, saying it may exist; the retry answers it', async () => {
    const hold = holdEnqueue();
    try {
      const r = await api.http.post('/flows').send({ idempotencyKey: 'k-deadline', jobs: jobs('d') });
      expect([r.status, r.body.error.code]).toEqual([503, 'unavailable']);
      expect(r.body.error.message).toMatch(/HTTP_ANSWER_TIMEOUT_MS.*; flow [0-9a-f-]{36} may exist \(its submission goes on\): retry with the same idempotencyKey/);
      expect(r.body.error.details).toEqual([{ path: 'flowId', message: expect.stringMatching(/^[0-9a-f-]{36}$/) }]);
      hold.release();
      const flowId = r.body.error.details[0].message;
      const again = await waitUntil('the flow complete', async () => {
        const a = await api.http.post('/flows').send({ idempotencyKey: 'k-deadline', jobs: jobs('d') });
        return a.status === 200 ? a : false;
      }, 10_000, 100);
      expect(again.body.flowId).toBe(flowId);
    } finally {
      hold.release();
    }
  });

  it('a failure after the record, rolled back completely: 503 names the flow, says submit again, and frees the key', async () => {
    const real = store.enqueue.bind(store);
    let calls = 0;
    const spy = jest.spyOn(store, 'enqueue').mockImplementation(async (...args) => {
      if (++calls === 2) throw new UnavailableError('injected: Redis refused the second queue');
      return real(...args);
    });
    let failed: any;
    try {
      failed = await api.http.post('/flows').send({ idempotencyKey: 'k-clean', jobs: jobs('f') });
    } finally {
      spy.mockRestore();
    }
    expect([failed.status, failed.body.error.code]).toEqual([503, 'unavailable']);
    const flowId = failed.body.error.details[0].message;
    expect(failed.body.error.message).toBe(
      `POST /flows: flow ${flowId} failed after it was recorded (injected: Redis refused the second queue); rolled back: none of its 3 jobs will run and its idempotencyKey is free again: submit again`,
    );
    const retry = await api.http.post('/flows').send({ idempotencyKey: 'k-clean', jobs: jobs('f') });
    expect(retry.status).toBe(201);
    expect(retry.body.flowId).not.toBe(flowId);
  });

  it('a rollback that cannot confirm the jobs are gone (Redis lost created ones): "may exist", never "nothing was kept"; the key stays', async () => {
    const real = store.enqueue.bind(store);
    let calls = 0;
    const enq = jest.spyOn(store, 'enqueue').mockImplementation(async (...args) => {
      if (++calls === 2) throw new UnavailableError('injected: Redis went away');
      return real(...args);
    });
    // The jobs the first enqueue created are not found any more: Redis came back empty (the probe's case).
    const cancel = jest.spyOn(store, 'cancel').mockImplementation(async (_q, id) => {
      throw new JobNotFoundError(id);
    });
    let failed: any;
    try {
      failed = await api.http.post('/flows').send({ idempotencyKey: 'k-lost', jobs: jobs('l') });
    } finally {
      enq.mockRestore();
      cancel.mockRestore();
    }
    expect([failed.status, failed.body.error.code]).toEqual([503, 'unavailable']);
    const flowId = failed.body.error.details[0].message;
    expect(failed.body.error.message).not.toMatch(/nothing was kept|submit again/);
    expect(failed.body.error.message).toMatch(
      new RegExp(`the rollback could not confirm it is gone: 2 of its 3 jobs may still exist \\([0-9a-f-]{36} was created, and Redis lost it, .*\\)\\. GET /flows/${flowId} shows what exists, DELETE /flows/${flowId} cancels what is left; the idempotencyKey stays with this flow`),
    );
    // The retry with the key finds that flow (not complete): no second flow.
    const retry = await api.http.post('/flows').send({ idempotencyKey: 'k-lost', jobs: jobs('l') });
    expect([retry.status, retry.body.error.details]).toEqual([503, [{ path: 'flowId', message: flowId }]]);
    // Without a key the answer says what a retry would do.
    const cancel2 = jest.spyOn(store, 'cancel').mockImplementation(async (_q, id) => {
      throw new JobNotFoundError(id);
    });
    calls = 0;
    const enq2 = jest.spyOn(store, 'enqueue').mockImplementation(async (...args) => {
      if (++calls === 2) throw new UnavailableError('injected: Redis went away');
      return real(...args);
    });
    try {
      const plain = await api.http.post('/flows').send({ jobs: jobs('l2') });
      expect(plain.status).toBe(503);
      expect(plain.body.error.message).toMatch(/may still exist .*a retry without an idempotencyKey makes a second flow$/);
      expect(plain.body.error.details).toEqual([{ path: 'flowId', message: expect.stringMatching(/^[0-9a-f-]{36}$/) }]);
    } finally {
      enq2.mockRestore();
      cancel2.mockRestore();
    }
  });

  it('the key is per project and kept IDEMPOTENCY_TTL_MS (the job keys\' lifetime)', async () => {
    const flows = api.app.get(FlowRecordStore);
    const n = normalizeFlow({ jobs: [{ ref: 'a', type: 't', queue: 'q' }] }, 1000).jobs;
    expect(await flows.claimKey('p1', 'k', 'f-1', n, 60_000)).toEqual({ claimed: true });
    expect(await flows.claimKey('p2', 'k', 'f-2', n, 60_000)).toEqual({ claimed: true });
    expect(await flows.claimKey('p1', 'k', 'f-3', n, 60_000)).toEqual({ claimed: false, flowId: 'f-1', sameBody: true });
    const other = normalizeFlow({ jobs: [{ ref: 'a', type: 't', queue: 'q', priority: 1 }] }, 1000).jobs;
    expect(await flows.claimKey('p1', 'k', 'f-3', other, 60_000)).toEqual({ claimed: false, flowId: 'f-1', sameBody: false });
    const ttl = await stores.ctx.redis.pttl(`${api.prefix}:{flows@p1}:idem:k`);
    expect(ttl).toBeGreaterThan(50_000);
    expect(ttl).toBeLessThanOrEqual(60_000);
    expect(await flows.releaseKey('p1', 'k', 'f-3')).toBe(false);
    expect(await flows.releaseKey('p1', 'k', 'f-1')).toBe(true);
    expect(await flows.claimKey('p1', 'k', 'f-3', other, 60_000)).toEqual({ claimed: true });
    // Through the API: IDEMPOTENCY_TTL_MS (default 24 h).
    expect((await api.http.post('/flows').send({ idempotencyKey: 'k-ttl', jobs: jobs('t') })).status).toBe(201);
    const apiTtl = await stores.ctx.redis.pttl(`${api.prefix}:{flows@default}:idem:k-ttl`);
    expect(apiTtl).toBeGreaterThan(api.config.idempotencyTtlMs - 60_000);
  });

  it('the TypeScript client: flows.create with idempotencyKey retries a 503 until the flow is complete, then replays it', async () => {
    const client = new SluiceClient({ baseUrl: api.url, retries: { max: 20, baseMs: 50, maxMs: 1000 } });
    const hold = holdEnqueue();
    const before = await records();
    const first = client.flows.create(jobs('ts') as never, { idempotencyKey: 'k-client' });
    await waitUntil('the first flow recorded', async () => (await records()) === before + 1, 10_000);
    // A second call while the first is held: 503 (not complete), retried (Retry-After 1 s) until it is.
    const second = client.flows.create(jobs('ts') as never, { idempotencyKey: 'k-client' });
    setTimeout(() => hold.release(), 300);
    const [a, b] = await Promise.all([first, second]);
    expect([a.replayed, b.replayed, b.flowId]).toEqual([false, true, a.flowId]);
    expect(b.jobs.map((j) => j.id)).toEqual(a.jobs.map((j) => j.id));
    expect(await records()).toBe(before + 1);
  });

  it('bad idempotencyKey and dependsOn: null → 400 naming the field', async () => {
    const cases: [object, string][] = [
      [{ idempotencyKey: null, jobs: jobs('v') }, 'idempotencyKey'],
      [{ idempotencyKey: '', jobs: jobs('v') }, 'idempotencyKey'],
      [{ idempotencyKey: 'x'.repeat(257), jobs: jobs('v') }, 'idempotencyKey'],
      [{ idempotencyKey: 5, jobs: jobs('v') }, 'idempotencyKey'],
      [{ idempotencyKey: ['k'], jobs: jobs('v') }, 'idempotencyKey'],
      [{ jobs: [{ ref: 'a', type: 't', queue: 'fi-a', dependsOn: null }] }, 'jobs.0.dependsOn'],
      [{ jobs: [{ ref: 'a', type: 't', queue: 'fi-a' }, { ref: 'b', type: 't', queue: 'fi-a', dependsOn: null }] }, 'jobs.1.dependsOn'],
    ];
    for (const [body, path] of cases) {
      const r = await api.http.post('/flows').send(body);
      expect({ body, status: r.status, paths: [...new Set(r.body.error?.details?.map((d: { path: string }) => d.path))] }).toEqual({ body, status: 400, paths: [path] });
    }
    expect((await api.http.post('/flows').send({ idempotencyKey: 'x'.repeat(256), jobs: jobs('v') })).status).toBe(201);
  });
});
