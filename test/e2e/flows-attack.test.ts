import { HistoryQueries } from '../../src/history';
import { REDIS_STORES } from '../../src/redis/redis.module';
import type { RedisStores } from '../../src/redis/stores';
import { startTestApi, type TestApi } from '../support/http';
import { waitUntil } from '../support/timing';

/** Probes of the Workflows routes (review of issue 21). */
describe('workflows under attack (AUTH off)', () => {
  let api: TestApi;
  beforeAll(async () => {
    api = await startTestApi('e2e-flowatk', { ROLE: 'api,scheduler,audit', PROJECT_MAX_WAITING: '2500' });
    for (const q of ['fa-a', 'fa-cap', 'fa-r', 'fa-x', 'fa-s1', 'fa-s2']) expect((await api.http.put(`/queues/${q}`).send({ external: true })).status).toBe(200);
  });
  afterAll(async () => {
    await api?.close();
  });
  const j = (ref: unknown, extra: object = {}) => ({ ref, type: 't', queue: 'fa-a', ...extra });

  it('hostile bodies and path params: 4xx in the envelope, never 5xx', async () => {
    const bodies: unknown[] = [
      { jobs: [j('a\u0000')] },
      { jobs: [j('\ud800')] },
      { jobs: [j('a'), j('b', { dependsOn: ['a\u0000'] })] },
      { jobs: [j('a'), j('b', { dependsOn: ['\udfff'] })] },
      { jobs: [j('a'), j('b', { dependsOn: 'a' })] },
      { jobs: [j('a'), j('b', { dependsOn: [1] })] },
      { jobs: [j('a'), j('b', { dependsOn: [null] })] },
      { jobs: [j('a'), j('b', { dependsOn: [['a']] })] },
      { jobs: [j('a'), j('b', { dependsOn: { 0: 'a' } })] },
      { jobs: [j('a'), j('b', { dependsOn: null })] },
      { jobs: [j('a'), j('b', { dependsOn: ['a', 'a'] })] },
      { jobs: [j('a'), j('b', { dependsOn: ['b', 'b'] })] },
      { jobs: [j('a'), j('b', { onDependencyFailure: null })] },
      { jobs: [j('a'), j('b', { onDependencyFailure: ['run'] })] },
      { jobs: [j(5)] },
      { jobs: [j(null)] },
      { jobs: [j(['a'])] },
      { jobs: [j('x'.repeat(65))] },
      { jobs: [j('')] },
      { jobs: [null] },
      { jobs: [[]] },
      { jobs: ['a'] },
      { jobs: {} },
      { jobs: { length: 1, 0: j('a') } },
      { jobs: null },
      [],
      'x',
      { jobs: [j('__proto__'), j('constructor', { dependsOn: ['__proto__', 'toString'] })] },
      { jobs: [j('a', { dependsOn: Array.from({ length: 1001 }, (_, i) => `r${i}`) })] },
      { jobs: [j('a', { queue: 'Bad Queue' })] },
      { jobs: [j('a', { queue: 'a\u0000' })] },
      { jobs: [j('a', { type: '\ud800' })] },
      { jobs: [j('a', { payload: { s: '\ud800' } })] },
      { jobs: [j('a', { payload: { ['\u0000']: 1 } })] },
      { jobs: [j('a', { concurrencyKey: '\u0000' })] },
      { jobs: [j('a'), j('b', { dependsOn: ['a'], runAt: 'x' })] },
      { jobs: [j('a', { delayMs: '1e1' })] },
      { jobs: [j('a', { delayMs: -1 })] },
      { jobs: [j('a', { delayMs: 1, runAt: new Date().toISOString() })] },
      { jobs: [j('a', { priority: 'urgent' })] },
    ];
    for (const body of bodies) {
      const res = await api.http.post('/flows').set('content-type', 'application/json').send(JSON.stringify(body));
      expect({ body, status: res.status, hasEnvelope: typeof res.body?.error?.code }).toEqual({ body, status: expect.any(Number), hasEnvelope: 'string' });
      expect({ body, status: res.status }).toEqual({ body, status: res.status >= 400 && res.status < 500 ? res.status : 'not 4xx' });
    }
    const raw = ['{"jobs":[{"ref":"a\\u0000","type":"t"}]}', '{"jobs":[{"ref":"\\ud800","type":"t"}]}', '{"jobs":[{"ref":"a","type":"t","dependsOn":["\\udc00"]}]}', '{"jobs":[', '{"jobs":[{"ref":"a","type":"t","__proto__":{"x":1}}]}', '{"jobs":[{"ref":"a","type":"t","constructor":{"prototype":{"x":1}}}]}'];
    for (const body of raw) {
      const res = await api.http.post('/flows').set('content-type', 'application/json').send(body);
      expect({ body, status: res.status, code: typeof res.body?.error?.code }).toEqual({ body, status: res.status >= 400 && res.status < 500 ? res.status : 'not 4xx', code: 'string' });
    }
    const params = ['%00', '%ED%A0%80', '%F0%9F%98%80', 'x'.repeat(300), '0193a6f4-1c2b-7d3e-8f40-5a6b7c8d9e0f%00', '..%2F..%2Fjobs', '%7Bflow%3Ax%7D', '*', '0193A6F4-1C2B-7D3E-8F40-5A6B7C8D9E0F', '%C0%80', '%FF'];
    for (const p of params) {
      for (const r of [await api.http.get(`/flows/${p}`), await api.http.delete(`/flows/${p}`), await api.http.get(`/jobs/${p}/dependencies`), await api.http.get(`/flows/${p}?x=%00`)]) {
        expect({ p, status: r.status, code: typeof r.body?.error?.code }).toEqual({ p, status: r.status >= 400 && r.status < 500 ? r.status : 'not 4xx', code: 'string' });
      }
    }
    for (const r of [await api.http.post('/flows/x'), await api.http.put('/flows/0193a6f4-1c2b-7d3e-8f40-5a6b7c8d9e0f').send({}), await api.http.delete('/flows/0193a6f4-1c2b-7d3e-8f40-5a6b7c8d9e0f').send({ a: 1 })]) {
      expect(r.status >= 400 && r.status < 500).toBe(true);
    }
  });

  it('blocked jobs count toward PROJECT_MAX_WAITING: flows cannot hold more jobs not started than the cap', async () => {
    const flowOf = () => ({ jobs: [{ ref: 'root', type: 't', queue: 'fa-cap', delayMs: 3_600_000 }, ...Array.from({ length: 999 }, (_, i) => ({ ref: `b${i}`, type: 't', queue: 'fa-cap', dependsOn: ['root'] }))] });
    const ids: string[] = [];
    const statuses: number[] = [];
    for (let i = 0; i < 3; i++) {
      const res = await api.http.post('/flows').send(flowOf());
      statuses.push(res.status);
      if (res.status === 201) ids.push(res.body.flowId);
      await new Promise((r) => setTimeout(r, 1500)); // past the cap's refresh
    }
    for (const id of ids) expect((await api.http.delete(`/flows/${id}`)).status).toBe(200);
    expect(statuses).toEqual([201, 201, 429]);
  });

  const claim = async (queue: string) => (await api.http.post(`/queues/${queue}/claim`).send({ workerId: 'w-1', max: 10 })).body.jobs as { id: string; lockToken: string }[];
  const statusOf = async (flowId: string) => Object.fromEntries((await api.http.get(`/flows/${flowId}`)).body.jobs.map((x: { ref: string; status: string }) => [x.ref, x.status]));
  const submit = async (jobs: object[]) => {
    const res = await api.http.post('/flows').send({ jobs });
    expect(res.status).toBe(201);
    return { flowId: res.body.flowId as string, id: Object.fromEntries(res.body.jobs.map((x: { ref: string; id: string }) => [x.ref, x.id])) as Record<string, string> };
  };

  it('a flow job cancelled while blocked cannot be retried into waiting before its dependencies completed (409); once they have, it can', async () => {
    const q = 'fa-r';
    // Cancelled by hand while blocked, its dependency not run yet.
    const f = await submit([{ ref: 'a', type: 't', queue: q }, { ref: 'b', type: 't', queue: q, dependsOn: ['a'] }, { ref: 'r', type: 't', queue: q, dependsOn: ['a'], onDependencyFailure: 'run' }]);
    for (const ref of ['b', 'r']) expect((await api.http.delete(`/jobs/${f.id[ref]}`)).status).toBe(200);
    for (const ref of ['b', 'r']) {
      const retry = await api.http.post(`/jobs/${f.id[ref]}/retry`).send({});
      expect([ref, retry.status, retry.body.error?.code, retry.body.error?.message]).toEqual([ref, 409, 'conflict', expect.stringMatching(/a \(waiting\)/)]);
    }
    const [a, ...more] = await claim(q);
    expect([a.id, more]).toEqual([f.id.a, []]);
    expect(await statusOf(f.flowId)).toEqual({ a: 'active', b: 'cancelled', r: 'cancelled' });
    // Once a completed, b and r may be retried: they run.
    expect((await api.http.post(`/jobs/${a.id}/complete`).send({ lockToken: a.lockToken, result: 1 })).status).toBe(200);
    for (const ref of ['b', 'r']) expect((await api.http.post(`/jobs/${f.id[ref]}/retry`).send({})).status).toBe(200);
    expect((await claim(q)).map((j) => j.id).sort()).toEqual([f.id.b, f.id.r].sort());

    // A dependent cancelled because its dependency failed: not retried on its own while that stays failed.
    const g = await submit([{ ref: 'x', type: 't', queue: q }, { ref: 'y', type: 't', queue: q, dependsOn: ['x'] }]);
    const [x] = (await claim(q)).filter((j) => j.id === g.id.x);
    expect((await api.http.post(`/jobs/${x.id}/fail`).send({ lockToken: x.lockToken, error: { message: 'no' }, retryable: false })).status).toBe(200);
    await waitUntil('y cancelled', async () => (await statusOf(g.flowId)).y === 'cancelled', 10_000, 20);
    expect((await api.http.post(`/jobs/${g.id.y}/retry`).send({})).status).toBe(409);
    expect(await claim(q)).toEqual([]);
    // Retrying the failed one brings y back blocked, as before.
    expect((await api.http.post(`/jobs/${g.id.x}/retry`).send({})).status).toBe(200);
    await waitUntil('y blocked again', async () => (await statusOf(g.flowId)).y === 'blocked', 10_000, 20);
  });

  it('the same refusal for a hand-cancelled blocked job Redis no longer holds (retried from the history)', async () => {
    const q = 'fa-r';
    const stores = api.app.get<RedisStores>(REDIS_STORES);
    const f = await submit([{ ref: 'a', type: 't', queue: q, delayMs: 3_600_000 }, { ref: 'b', type: 't', queue: q, dependsOn: ['a'] }]);
    expect((await api.http.delete(`/jobs/${f.id.b}`)).status).toBe(200);
    const history = api.app.get(HistoryQueries);
    await waitUntil('the mirror caught up', async () => (await history.mirrorLag()).pending === 0, 15_000);
    await waitUntil('b forgotten by Redis', async () => (await stores.ctx.redis.exists(`${stores.ctx.keys(q).base}job:${f.id.b}`)) === 0, 10_000, 20);
    const retry = await api.http.post(`/jobs/${f.id.b}/retry`).send({});
    expect([retry.status, retry.body.error?.code]).toEqual([409, 'conflict']);
    expect((await api.http.get(`/jobs/${f.id.b}`)).body.status).toBe('cancelled');
    expect((await api.http.delete(`/flows/${f.flowId}`)).status).toBe(200);
  });

  it('a flow whose record Redis no longer holds (expired after its end, or lost): GET reads the history, and DELETE too (200, its unfinished jobs cancelled), not 404', async () => {
    const q = 'fa-x';
    const stores = api.app.get<RedisStores>(REDIS_STORES);
    const f = await submit([{ ref: 'a', type: 't', queue: q }, { ref: 'b', type: 't', queue: q, dependsOn: ['a'], delayMs: 3_600_000 }]);
    const [a] = await claim(q);
    expect(a.id).toBe(f.id.a);
    expect((await api.http.post(`/jobs/${a.id}/complete`).send({ lockToken: a.lockToken, result: 1 })).status).toBe(200);
    await waitUntil('b released (delayed)', async () => (await statusOf(f.flowId)).b === 'delayed', 10_000, 20);
    const history = api.app.get(HistoryQueries);
    await waitUntil('the mirror caught up', async () => (await history.mirrorLag()).pending === 0, 15_000);
    await stores.flows.discard(f.flowId); // as the record's expiry would
    const got = await api.http.get(`/flows/${f.flowId}`);
    expect([got.status, got.body.status]).toEqual([200, 'running']);
    const del = await api.http.delete(`/flows/${f.flowId}`);
    expect([del.status, del.body.status, del.body.counts]).toEqual([200, 'cancelled', expect.objectContaining({ completed: 1, cancelled: 1 })]);
    expect((await api.http.get(`/jobs/${f.id.b}`)).body.status).toBe('cancelled');
    expect((await api.http.delete(`/flows/${f.flowId}`)).status).toBe(200);
    // Another project still sees nothing.
    expect((await api.http.delete(`/flows/0193a6f4-1c2b-7d3e-8f40-5a6b7c8d9e0f`)).status).toBe(404);
  });

  it('DELETE /flows/:id racing with a worker completing jobs and the flow worker: the flow ends, nothing left blocked or runnable, one "unblocked" per job at most', async () => {
    const history = api.app.get(HistoryQueries);
    for (let round = 0; round < 6; round++) {
      const mids = Array.from({ length: 20 }, (_, i) => ({ ref: `m${i}`, type: 't', queue: i % 2 ? 'fa-s1' : 'fa-s2', dependsOn: ['root'], onDependencyFailure: i % 3 ? 'cancel' : 'run' }));
      const f = await submit([{ ref: 'root', type: 't', queue: 'fa-s1' }, ...mids, { ref: 'sink', type: 't', queue: 'fa-s2', dependsOn: mids.map((m) => m.ref) }]);
      let stop = false;
      const worker = (async () => {
        while (!stop) {
          for (const q of ['fa-s1', 'fa-s2']) {
            const jobs = await claim(q);
            await Promise.all(jobs.map((j) => api.http.post(`/jobs/${j.id}/complete`).send({ lockToken: j.lockToken, result: null })));
          }
        }
      })();
      await new Promise((r) => setTimeout(r, 5 + round * 15));
      const del = await api.http.delete(`/flows/${f.flowId}`);
      expect(del.status).toBe(200);
      await waitUntil(`round ${round}: the flow ended`, async () => (await api.http.get(`/flows/${f.flowId}`)).body.status !== 'running', 15_000, 50);
      await new Promise((r) => setTimeout(r, 300));
      stop = true;
      await worker;
      const view = (await api.http.get(`/flows/${f.flowId}`)).body;
      expect(view.counts).toMatchObject({ blocked: 0, waiting: 0, delayed: 0, active: 0 });
      await waitUntil('the mirror caught up', async () => (await history.mirrorLag()).pending === 0, 15_000);
      for (const j of view.jobs as { id: string; ref: string }[]) {
        const evs = (await api.http.get(`/jobs/${j.id}/events`)).body.items as { event: string }[];
        expect([round, j.ref, evs.filter((e) => e.event === 'unblocked').length <= 1]).toEqual([round, j.ref, true]);
      }
    }
  });
});
