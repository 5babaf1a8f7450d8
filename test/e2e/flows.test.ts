import { randomBytes } from 'node:crypto';
import { UnavailableError } from '../../src/core/errors';
import { JobStore } from '../../src/core/ports';
import { HistoryQueries } from '../../src/history';
import { REDIS_STORES } from '../../src/redis/redis.module';
import type { RedisStores } from '../../src/redis/stores';
import { NotFoundError, SluiceClient, ValidationFailedError } from '../../clients/typescript/src';
import { startTestApi, type TestApi } from '../support/http';
import { waitUntil } from '../support/timing';

/**
 * Workflows over HTTP (API.md v1.2 "Workflows"), on the real stack (Redis,
 * PostgreSQL, the flow worker of the scheduler role): POST /flows,
 * GET /flows/:id, DELETE /flows/:id, GET /jobs/:id/dependencies, run by
 * claiming and completing through the external worker protocol.
 */
const paths = (res: { body: any }) => [...new Set(((res.body.error?.details ?? []) as { path: string }[]).map((d) => d.path))].sort();

describe('workflows over HTTP (AUTH off)', () => {
  let api: TestApi;
  let stores: RedisStores;
  const QUEUES = ['wf-a', 'wf-b', 'wf-fail', 'wf-del', 'wf-rb1', 'wf-rb2', 'wf-bad', 'wf-retry'];

  beforeAll(async () => {
    api = await startTestApi('e2e-flows', { ROLE: 'api,scheduler,audit' });
    stores = api.app.get<RedisStores>(REDIS_STORES);
    for (const q of QUEUES) expect((await api.http.put(`/queues/${q}`).send({ external: true })).status).toBe(200);
  });
  afterAll(async () => {
    await api?.close();
  });

  const claim = async (queue: string) => (await api.http.post(`/queues/${queue}/claim`).send({ workerId: 'w-1', max: 10 })).body.jobs as { id: string; lockToken: string; payload: any }[];
  const complete = async (j: { id: string; lockToken: string }, result: unknown) => {
    const r = await api.http.post(`/jobs/${j.id}/complete`).send({ lockToken: j.lockToken, result });
    expect(r.status).toBe(200);
  };
  const flow = async (id: string) => (await api.http.get(`/flows/${id}`)).body;
  const statusOf = async (flowId: string) => Object.fromEntries((await flow(flowId)).jobs.map((j: { ref: string; status: string }) => [j.ref, j.status]));

  /** Keys of the test's Redis prefix matching `pattern` (after the prefix). */
  const keys = async (pattern: string) => {
    const out: string[] = [];
    let cursor = '0';
    do {
      const [next, batch] = await stores.ctx.redis.scan(cursor, 'MATCH', `${api.prefix}${pattern}`, 'COUNT', 1000);
      cursor = next;
      out.push(...batch);
    } while (cursor !== '0');
    return out;
  };
  const settled = async () => {
    const history = api.app.get(HistoryQueries);
    await waitUntil('the mirror caught up', async () => (await history.mirrorLag()).pending === 0, 15_000);
  };
  const pgJobs = async (queueLike: string) => Number((await api.db.dataSource.query(`SELECT count(*) AS n FROM jobs WHERE queue LIKE $1`, [queueLike]))[0].n);
  const events = async (id: string) => {
    await settled();
    return (await api.http.get(`/jobs/${id}/events`)).body.items as { event: string; reason: string | null }[];
  };

  it('a diamond across two queues runs in order through the external worker protocol; dependencies show results', async () => {
    const res = await api.http.post('/flows').send({
      jobs: [
        { ref: 'top', type: 'etl.extract', queue: 'wf-a', payload: { n: 1 } },
        { ref: 'left', type: 'etl.left', queue: 'wf-b', dependsOn: ['top'] },
        { ref: 'right', type: 'etl.right', queue: 'wf-a', dependsOn: ['top'] },
        { ref: 'bottom', type: 'etl.join', queue: 'wf-b', dependsOn: ['left', 'right'] },
      ],
    });
    expect(res.status).toBe(201);
    const { flowId, jobs } = res.body;
    const id = Object.fromEntries(jobs.map((j: { ref: string; id: string }) => [j.ref, j.id]));
    expect(jobs.map((j: any) => [j.ref, j.status, j.queue, j.dependsOn])).toEqual([
      ['top', 'waiting', 'wf-a', []],
      ['left', 'blocked', 'wf-b', [id.top]],
      ['right', 'blocked', 'wf-a', [id.top]],
      ['bottom', 'blocked', 'wf-b', [id.left, id.right]],
    ]);
    expect(jobs[0]).toMatchObject({ type: 'etl.extract', payload: { n: 1 }, attempts: 0 });
    expect(await flow(flowId)).toEqual({
      flowId,
      status: 'running',
      counts: { waiting: 1, delayed: 0, active: 0, completed: 0, failed: 0, cancelled: 0, blocked: 3 },
      jobs: [
        { ref: 'top', id: id.top, status: 'waiting', dependsOn: [] },
        { ref: 'left', id: id.left, status: 'blocked', dependsOn: [id.top] },
        { ref: 'right', id: id.right, status: 'blocked', dependsOn: [id.top] },
        { ref: 'bottom', id: id.bottom, status: 'blocked', dependsOn: [id.left, id.right] },
      ],
    });
    // Only the root is claimable.
    expect(await claim('wf-b')).toEqual([]);
    const [top] = await claim('wf-a');
    expect(top.id).toBe(id.top);
    expect(await statusOf(flowId)).toEqual({ top: 'active', left: 'blocked', right: 'blocked', bottom: 'blocked' });
    await complete(top, { rows: 10 });
    // The flow worker releases left and right (in two queues).
    await waitUntil('left and right released', async () => (await statusOf(flowId)).left === 'waiting' && (await statusOf(flowId)).right === 'waiting', 10_000, 20);
    expect((await api.http.get(`/jobs/${id.bottom}`)).body.status).toBe('blocked');
    const [left] = await claim('wf-b');
    const [right] = await claim('wf-a');
    expect([left.id, right.id]).toEqual([id.left, id.right]);
    await complete(left, { side: 'L' });
    await new Promise((r) => setTimeout(r, 200));
    expect((await statusOf(flowId)).bottom).toBe('blocked');
    await complete(right, { side: 'R' });
    await waitUntil('bottom released', async () => (await statusOf(flowId)).bottom === 'waiting', 10_000, 20);
    const deps = await api.http.get(`/jobs/${id.bottom}/dependencies`);
    expect(deps.status).toBe(200);
    expect(deps.body).toEqual({
      items: [
        { ref: 'left', id: id.left, status: 'completed', result: { side: 'L' }, lastError: null },
        { ref: 'right', id: id.right, status: 'completed', result: { side: 'R' }, lastError: null },
      ],
    });
    expect((await api.http.get(`/jobs/${id.top}/dependencies`)).body).toEqual({ items: [] });
    const [bottom] = await claim('wf-b');
    expect(bottom.id).toBe(id.bottom);
    await complete(bottom, 'done');
    expect(await flow(flowId)).toMatchObject({ status: 'completed', counts: { completed: 4, blocked: 0, waiting: 0 } });
    // Once Redis has forgotten the jobs and the record (pruned after
    // mirroring, or Redis lost), both read from PostgreSQL.
    await settled();
    const before = await flow(flowId);
    for (const [ref, q] of [['top', 'wf-a'], ['left', 'wf-b'], ['right', 'wf-a'], ['bottom', 'wf-b']]) await stores.ctx.redis.del(`${stores.ctx.keys(q).base}job:${id[ref]}`);
    for (const k of await keys(`:{flow:${flowId}}:*`)) await stores.ctx.redis.del(k);
    expect((await api.http.get(`/flows/${flowId}`)).body).toEqual(before);
    expect((await api.http.get(`/jobs/${id.bottom}/dependencies`)).body).toEqual(deps.body);
    // A job outside any flow has no dependencies.
    const plain = await api.http.post('/jobs').send({ type: 'x', queue: 'wf-a' });
    expect((await api.http.get(`/jobs/${plain.body.id}/dependencies`)).body).toEqual({ items: [] });
    await api.http.delete(`/jobs/${plain.body.id}`);
  });

  it('a failure: the "run" dependent runs once its dependencies ended, the default one is cancelled (dependency_failed), down the graph', async () => {
    const res = await api.http.post('/flows').send({
      jobs: [
        { ref: 'a', type: 'pay', queue: 'wf-fail' },
        { ref: 'ok', type: 'ok', queue: 'wf-fail' },
        { ref: 'report', type: 'report', queue: 'wf-fail', dependsOn: ['a', 'ok'], onDependencyFailure: 'run' },
        { ref: 'ship', type: 'ship', queue: 'wf-fail', dependsOn: ['a'] },
        { ref: 'notify', type: 'notify', queue: 'wf-fail', dependsOn: ['ship'], onDependencyFailure: 'cancel' },
      ],
    });
    expect(res.status).toBe(201);
    const { flowId } = res.body;
    const id = Object.fromEntries(res.body.jobs.map((j: { ref: string; id: string }) => [j.ref, j.id]));
    const first = await claim('wf-fail');
    expect(first.map((j) => j.id).sort()).toEqual([id.a, id.ok].sort());
    const a = first.find((j) => j.id === id.a)!;
    const ok = first.find((j) => j.id === id.ok)!;
    expect((await api.http.post(`/jobs/${a.id}/fail`).send({ lockToken: a.lockToken, error: { message: 'card declined' }, retryable: false })).status).toBe(200);
    await waitUntil('ship and notify cancelled', async () => {
      const s = await statusOf(flowId);
      return s.ship === 'cancelled' && s.notify === 'cancelled';
    }, 10_000, 20);
    // report waits for every dependency to end: ok is still active.
    expect((await statusOf(flowId)).report).toBe('blocked');
    expect((await flow(flowId)).status).toBe('running');
    await complete(ok, 1);
    await waitUntil('report released', async () => (await statusOf(flowId)).report === 'waiting', 10_000, 20);
    expect((await api.http.get(`/jobs/${id.report}/dependencies`)).body.items).toEqual([
      { ref: 'a', id: id.a, status: 'failed', result: null, lastError: 'card declined' },
      { ref: 'ok', id: id.ok, status: 'completed', result: 1, lastError: null },
    ]);
    for (const ref of ['ship', 'notify']) expect((await events(id[ref])).at(-1)).toMatchObject({ event: 'cancelled', reason: 'dependency_failed' });
    const [report] = await claim('wf-fail');
    await complete(report, 'partial');
    expect(await flow(flowId)).toMatchObject({ status: 'failed', counts: { completed: 2, failed: 1, cancelled: 2 } });
  });

  it('a DLQ retry after the mirror pruned the cancelled dependents brings them back; a hand-cancelled job retried from the history rejoins its flow', async () => {
    const res = await api.http.post('/flows').send({
      jobs: [
        { ref: 'a', type: 'charge', queue: 'wf-retry' },
        { ref: 'ship', type: 'ship', queue: 'wf-retry', dependsOn: ['a'] },
        { ref: 'notify', type: 'notify', queue: 'wf-retry', dependsOn: ['ship'] },
      ],
    });
    expect(res.status).toBe(201);
    const { flowId } = res.body;
    const id = Object.fromEntries(res.body.jobs.map((j: { ref: string; id: string }) => [j.ref, j.id]));
    const jobKey = (ref: string) => `${stores.ctx.keys('wf-retry').base}job:${id[ref]}`;
    const [a] = await claim('wf-retry');
    expect((await api.http.post(`/jobs/${a.id}/fail`).send({ lockToken: a.lockToken, error: { message: 'declined' }, retryable: false })).status).toBe(200);
    await waitUntil('ship and notify cancelled', async () => {
      const st = await statusOf(flowId);
      return st.ship === 'cancelled' && st.notify === 'cancelled';
    }, 10_000, 20);
    // Mirrored: a cancelled-for-a-dependency job is kept until its flow's record goes, not deleted.
    await settled();
    await waitUntil('the mirror handled the cancellations', async () => (await stores.ctx.redis.pttl(jobKey('notify'))) > 0, 10_000, 20);
    expect(await stores.ctx.redis.pttl(jobKey('ship'))).toBeGreaterThan(6 * 86_400_000);

    expect((await api.http.post(`/jobs/${id.a}/retry`).send({})).status).toBe(200);
    await waitUntil('ship and notify blocked again', async () => {
      const st = await statusOf(flowId);
      return st.ship === 'blocked' && st.notify === 'blocked';
    }, 10_000, 20);
    expect(await stores.ctx.redis.pttl(jobKey('ship'))).toBe(-1);
    for (const ref of ['a', 'ship']) {
      await waitUntil(`${ref} waiting`, async () => (await statusOf(flowId))[ref] === 'waiting', 10_000, 20);
      const [j] = await claim('wf-retry');
      expect(j.id).toBe(id[ref]);
      await complete(j, ref);
    }
    await waitUntil('notify released', async () => (await statusOf(flowId)).notify === 'waiting', 10_000, 20);
    const [n] = await claim('wf-retry');
    await complete(n, 'sent');
    await waitUntil('the flow completed', async () => (await flow(flowId)).status === 'completed', 10_000, 20);

    // A root cancelled by hand (its dependent cancelled for it), mirrored and forgotten by Redis, then retried:
    // revived from the history, still of its flow, it brings its dependent back.
    const second = await api.http.post('/flows').send({ jobs: [{ ref: 'x', type: 'x', queue: 'wf-retry' }, { ref: 'y', type: 'y', queue: 'wf-retry', dependsOn: ['x'] }] });
    const f2 = second.body.flowId;
    const id2 = Object.fromEntries(second.body.jobs.map((j: { ref: string; id: string }) => [j.ref, j.id]));
    const key2 = (ref: string) => `${stores.ctx.keys('wf-retry').base}job:${id2[ref]}`;
    expect((await api.http.delete(`/jobs/${id2.x}`)).status).toBe(200);
    await waitUntil('y cancelled', async () => (await statusOf(f2)).y === 'cancelled', 10_000, 20);
    await settled();
    await waitUntil('x forgotten by Redis', async () => (await stores.ctx.redis.exists(key2('x'))) === 0, 10_000, 20);
    expect((await api.http.post(`/jobs/${id2.x}/retry`).send({})).status).toBe(200);
    expect(await stores.ctx.redis.hget(key2('x'), 'fl')).toBe(f2);
    await waitUntil('y blocked again', async () => (await statusOf(f2)).y === 'blocked', 10_000, 20);
    for (const ref of ['x', 'y']) {
      await waitUntil(`${ref} waiting`, async () => (await statusOf(f2))[ref] === 'waiting', 10_000, 20);
      const [j] = await claim('wf-retry');
      expect(j.id).toBe(id2[ref]);
      await complete(j, ref);
    }
    await waitUntil('the second flow completed', async () => (await flow(f2)).status === 'completed', 10_000, 20);
  });

  it('refused flows (cycle, self-reference, unknown and duplicate refs, 1,001 jobs, one bad job, unknown fields): 400 naming the path, nothing created', async () => {
    const flowsBefore = (await keys(':{flow:*')).length;
    const j = (ref: string, extra: object = {}) => ({ ref, type: 'bad.work', queue: 'wf-bad', ...extra });
    const cases: [object, string[], RegExp?][] = [
      [{ jobs: [j('a', { dependsOn: ['b'] }), j('b', { dependsOn: ['a'] }), j('c')] }, ['jobs.0.dependsOn', 'jobs.1.dependsOn'], /cycle: a → b → a/],
      [{ jobs: [j('a', { dependsOn: ['a'] })] }, ['jobs.0.dependsOn.0'], /self-reference/],
      [{ jobs: [j('a'), j('b', { dependsOn: ['zz'] })] }, ['jobs.1.dependsOn.0'], /unknown ref "zz"/],
      [{ jobs: [j('a'), j('a')] }, ['jobs.1.ref'], /duplicate ref "a"/],
      [{ jobs: Array.from({ length: 1001 }, (_, i) => j(`r${i}`)) }, ['jobs']],
      [{ jobs: [] }, ['jobs']],
      [{ jobs: [j('a'), j('b', { dependsOn: ['a'] }), j('c', { priority: 1000 })] }, ['jobs.2.priority']],
      [{ jobs: [j('a'), j('b', { queue: 'wf-bad-internal', type: 'no.such.handler' })] }, ['jobs.1.type'], /no handler is registered/],
      [{ jobs: [j('a', { idempotencyKey: 'k' })] }, ['jobs.0.idempotencyKey']],
      [{ jobs: [j('a', { debounce: { key: 'k', windowMs: 1000 } })] }, ['jobs.0.debounce']],
      [{ jobs: [j('a', { bogus: 1 })] }, ['jobs.0.bogus']],
      [{ jobs: [j('a')], extra: true }, ['extra']],
      [{ jobs: [{ type: 'bad.work', queue: 'wf-bad' }] }, ['jobs.0.ref']],
      [{ jobs: [j('a', { onDependencyFailure: 'maybe' })] }, ['jobs.0.onDependencyFailure']],
      [{ jobs: [j('a', { runAt: 'tomorrow' })] }, ['jobs.0.runAt']],
    ];
    for (const [body, want, message] of cases) {
      const res = await api.http.post('/flows').send(body);
      expect({ status: res.status, code: res.body.error?.code, paths: paths(res) }).toEqual({ status: 400, code: 'validation_failed', paths: want.sort() });
      if (message) expect(res.body.error.details.map((d: { message: string }) => d.message).join('\n')).toMatch(message);
    }
    // A payload over MAX_PAYLOAD_BYTES: 413, naming the job.
    const big = await api.http.post('/flows').send({ jobs: [j('a'), j('b', { payload: { s: 'x'.repeat(api.config.maxPayloadBytes) } })] });
    expect([big.status, big.body.error.code, big.body.error.message]).toEqual([413, 'payload_too_large', expect.stringMatching(/^jobs\.1: /)]);
    // Nothing in Redis: no job hash of these queues, no flow record; nothing in PostgreSQL.
    expect(await keys('*wf-bad*job:*')).toEqual([]);
    expect((await keys(':{flow:*')).length).toBe(flowsBefore);
    await settled();
    expect(await pgJobs('%wf-bad%')).toBe(0);
  });

  it('valid runAt/delayMs: a root due later is delayed; blocked jobs stay blocked', async () => {
    const runAt = new Date(Date.now() + 3_600_000).toISOString();
    const res = await api.http.post('/flows').send({ jobs: [{ ref: 'later', type: 't', queue: 'wf-del', runAt }, { ref: 'after', type: 't', queue: 'wf-del', dependsOn: ['later'], delayMs: 5000 }] });
    expect(res.status).toBe(201);
    expect(res.body.jobs.map((x: { status: string }) => x.status)).toEqual(['delayed', 'blocked']);
    expect(res.body.jobs[0].runAt).toBe(runAt);
    expect((await api.http.delete(`/flows/${res.body.flowId}`)).status).toBe(200);
  });

  it('DELETE /flows/:id cancels every unfinished job (an active one gets a cancel request), leaves the finished ones', async () => {
    const res = await api.http.post('/flows').send({
      jobs: [
        { ref: 'done', type: 't', queue: 'wf-del' },
        { ref: 'running', type: 't', queue: 'wf-del', dependsOn: ['done'] },
        { ref: 'next', type: 't', queue: 'wf-del', dependsOn: ['running'], onDependencyFailure: 'run' },
        { ref: 'side', type: 't', queue: 'wf-del', dependsOn: ['done'], delayMs: 3_600_000 },
      ],
    });
    const { flowId } = res.body;
    const id = Object.fromEntries(res.body.jobs.map((x: { ref: string; id: string }) => [x.ref, x.id]));
    await complete((await claim('wf-del'))[0], null);
    await waitUntil('running released', async () => (await statusOf(flowId)).running === 'waiting', 10_000, 20);
    const [running] = await claim('wf-del');
    expect(running.id).toBe(id.running);
    const del = await api.http.delete(`/flows/${flowId}`);
    expect(del.status).toBe(200);
    expect(del.body).toMatchObject({ flowId, status: 'running' });
    expect(Object.fromEntries(del.body.jobs.map((x: { ref: string; status: string }) => [x.ref, x.status]))).toEqual({ done: 'completed', running: 'active', next: 'cancelled', side: 'cancelled' });
    expect((await api.http.get(`/jobs/${id.running}`)).body.cancelRequested).toBe(true);
    // The active job's completion ends it cancelled; the "run" dependent stays cancelled.
    await api.http.post(`/jobs/${running.id}/complete`).send({ lockToken: running.lockToken, result: 1 });
    await new Promise((r) => setTimeout(r, 300));
    expect(await flow(flowId)).toMatchObject({ status: 'cancelled', counts: { completed: 1, cancelled: 3 } });
    expect(await claim('wf-del')).toEqual([]);
    // Again: nothing left to cancel.
    expect((await api.http.delete(`/flows/${flowId}`)).status).toBe(200);
    // Unknown or malformed ids: 404 in the envelope.
    for (const bad of ['0193a6f4-1c2b-7d3e-8f40-5a6b7c8d9e0f', 'nope', '{x}']) {
      for (const r of [await api.http.get(`/flows/${encodeURIComponent(bad)}`), await api.http.delete(`/flows/${encodeURIComponent(bad)}`)]) {
        expect([r.status, r.body.error?.code]).toEqual([404, 'not_found']);
      }
    }
  });

  it('the TypeScript client: flows.create, flows.get, jobs dependencies, flows.cancel', async () => {
    const client = new SluiceClient({ baseUrl: api.url, retries: false });
    const created = await client.flows.create([
      { ref: 'one', type: 't', queue: 'wf-del' },
      { ref: 'two', type: 't', queue: 'wf-del', dependsOn: ['one'] },
    ]);
    expect(created.jobs.map((j) => [j.ref, j.status])).toEqual([['one', 'waiting'], ['two', 'blocked']]);
    expect((await client.flows.get(created.flowId)).status).toBe('running');
    expect(await client.dependencies(created.jobs[1].id)).toEqual([{ ref: 'one', id: created.jobs[0].id, status: 'waiting', result: null, lastError: null }]);
    expect((await client.flows.cancel(created.flowId)).counts.cancelled).toBe(2);
    await expect(client.flows.create([{ ref: 'a', type: 't', queue: 'wf-del', dependsOn: ['a'] }])).rejects.toBeInstanceOf(ValidationFailedError);
    await expect(client.flows.get('0193a6f4-1c2b-7d3e-8f40-5a6b7c8d9e0f')).rejects.toBeInstanceOf(NotFoundError);
  });

  it('a submission failing midway is rolled back: the record deleted, the jobs created cancelled, none runnable', async () => {
    const store = api.app.get(JobStore);
    const real = store.enqueue.bind(store);
    let calls = 0;
    const spy = jest.spyOn(store, 'enqueue').mockImplementation(async (...args) => {
      if (++calls === 2) throw new UnavailableError('injected: Redis refused the second queue');
      return real(...args);
    });
    const flowsBefore = (await keys(':{flow:*meta')).length;
    try {
      const res = await api.http.post('/flows').send({
        jobs: [
          { ref: 'a', type: 't', queue: 'wf-rb1' },
          { ref: 'b', type: 't', queue: 'wf-rb2', dependsOn: ['a'] },
          { ref: 'c', type: 't', queue: 'wf-rb1', dependsOn: ['b'] },
        ],
      });
      expect([res.status, res.body.error?.code, res.body.error?.message]).toEqual([
        503,
        'unavailable',
        expect.stringMatching(/^POST \/flows: flow [0-9a-f-]{36} failed after it was recorded \(injected: Redis refused the second queue\); rolled back: none of its 3 jobs will run: submit again$/),
      ]);
      // The flow is named in `details` (API.md v1.3), and it is the one the message names.
      expect(res.body.error.details).toEqual([{ path: 'flowId', message: expect.stringMatching(/^[0-9a-f-]{36}$/) }]);
      expect(res.body.error.message).toContain(res.body.error.details[0].message);
    } finally {
      spy.mockRestore();
    }
    expect((await keys(':{flow:*meta')).length).toBe(flowsBefore);
    // wf-rb1's two jobs were created, then cancelled (Redis forgets them once PostgreSQL has them); wf-rb2's never were.
    for (const k of await keys('*wf-rb1*job:*')) expect([null, 'cancelled']).toContain(await stores.ctx.redis.hget(k, 's'));
    expect(await keys('*wf-rb2*job:*')).toEqual([]);
    expect(await claim('wf-rb1')).toEqual([]);
    await settled();
    expect(await pgJobs('%wf-rb2%')).toBe(0);
    expect(Number((await api.db.dataSource.query(`SELECT count(*) AS n FROM jobs WHERE queue LIKE '%wf-rb1%' AND status = 'cancelled'`))[0].n)).toBe(2);
  });
});

describe('workflows: roles, projects, operator log (AUTH on)', () => {
  const ROOT = 'sk_' + randomBytes(32).toString('base64url');
  let api: TestApi;
  const key: Record<string, string> = {};
  const as = (who: string) => {
    const auth = (r: any) => r.set('authorization', `Bearer ${key[who] ?? ROOT}`);
    return {
      get: (url: string) => auth(api.http.get(url)),
      post: (url: string, body: object) => auth(api.http.post(url)).send(body),
      del: (url: string) => auth(api.http.delete(url)),
    };
  };

  beforeAll(async () => {
    api = await startTestApi('e2e-flows-auth', { AUTH: 'on', SLUICE_BOOTSTRAP_ADMIN_KEY: ROOT, ROLE: 'api,audit' });
    expect((await api.http.post('/projects').set('authorization', `Bearer ${ROOT}`).send({ name: 'acme' })).status).toBe(201);
    for (const [name, role, project] of [
      ['viewer', 'viewer', 'default'],
      ['producer', 'producer', 'default'],
      ['operator', 'operator', 'default'],
      ['worker', 'worker', 'default'],
      ['acme-admin', 'admin', 'acme'],
    ] as const) {
      const r = await api.http.post('/keys').set('authorization', `Bearer ${ROOT}`).set('x-sluice-project', project).send({ name, role });
      expect(r.status).toBe(201);
      key[name] = r.body.secret;
    }
    expect((await as('operator').get('/queues')).status).toBe(200);
    expect((await api.http.put('/queues/wf-auth').set('authorization', `Bearer ${ROOT}`).send({ external: true })).status).toBe(200);
  });
  afterAll(async () => {
    await api?.close();
  });

  it('producer submits, viewer and worker may not; viewer reads; only operator cancels; another project sees 404; the cancel is audited', async () => {
    const body = { jobs: [{ ref: 'a', type: 't', queue: 'wf-auth' }, { ref: 'b', type: 't', queue: 'wf-auth', dependsOn: ['a'] }] };
    for (const who of ['viewer', 'worker']) {
      const r = await as(who).post('/flows', body);
      expect([who, r.status, r.body.error?.code]).toEqual([who, 403, 'forbidden']);
    }
    expect((await api.http.post('/flows').send(body)).status).toBe(401);
    const res = await as('producer').post('/flows', body);
    expect(res.status).toBe(201);
    const { flowId } = res.body;
    const b = res.body.jobs[1].id;
    for (const who of ['viewer', 'producer', 'operator']) {
      expect([who, (await as(who).get(`/flows/${flowId}`)).status, (await as(who).get(`/jobs/${b}/dependencies`)).status]).toEqual([who, 200, 200]);
    }
    expect((await as('viewer').get(`/jobs/${b}/dependencies`)).body.items).toEqual([{ ref: 'a', id: res.body.jobs[0].id, status: 'waiting', result: null, lastError: null }]);
    // Another project: as if the flow and its jobs did not exist.
    for (const r of [await as('acme-admin').get(`/flows/${flowId}`), await as('acme-admin').del(`/flows/${flowId}`), await as('acme-admin').get(`/jobs/${b}/dependencies`)]) {
      expect([r.status, r.body.error?.code]).toEqual([404, 'not_found']);
    }
    for (const who of ['viewer', 'producer', 'worker']) expect([who, (await as(who).del(`/flows/${flowId}`)).status]).toEqual([who, 403]);
    expect((await as('viewer').get(`/flows/${flowId}`)).body.status).toBe('running');
    const del = await as('operator').del(`/flows/${flowId}`);
    expect([del.status, del.body.status, del.body.counts.cancelled]).toEqual([200, 'cancelled', 2]);
    // Each project's operator log has its own attempts, refusals included.
    const logged = (who: string, n: number) =>
      waitUntil(`${who}'s cancels in the operator log`, async () => {
        const items: { action: string; target: string; status: number }[] = (await as(who).get('/audit-log?limit=50')).body.items;
        const mine = items.filter((e) => e.action === 'flow.cancel').map((e) => [e.target, e.status]);
        return mine.length >= n ? mine.sort() : undefined;
      }, 15_000, 100);
    expect(await logged('root', 4)).toEqual([[flowId, 200], [flowId, 403], [flowId, 403], [flowId, 403]]);
    expect(await logged('acme-admin', 1)).toEqual([[flowId, 404]]);
  });
});
