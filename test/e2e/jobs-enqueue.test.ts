import { startTestApi, TestApi } from '../support/http';

describe('POST /jobs (e2e)', () => {
  let api: TestApi;
  beforeAll(async () => {
    api = await startTestApi('e2e-enqueue');
  });
  afterAll(async () => {
    await api?.close();
  });

  it('creates a job: 201, the job object, X-Request-Id', async () => {
    const res = await api.http.post('/jobs').send({ type: 'diag.echo', payload: { to: 'a@b.c' }, priority: 'high' });
    expect(res.status).toBe(201);
    expect(res.headers['x-request-id']).toBeTruthy();
    expect(res.body).toMatchObject({ type: 'diag.echo', queue: 'default', status: 'waiting', priority: 10, attempts: 0, maxAttempts: 3, payload: { to: 'a@b.c' } });
    expect(res.body.createdAt).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
    const got = await api.http.get(`/jobs/${res.body.id}`);
    expect(got.status).toBe(200);
    expect(got.body.id).toBe(res.body.id);
  });

  it('echoes a client X-Request-Id, also on errors', async () => {
    const res = await api.http.get('/jobs/01a22977-706d-723e-926f-fd3ef1eef745').set('X-Request-Id', 'abc 123');
    expect(res.status).toBe(404);
    expect(res.headers['x-request-id']).toBe('abc 123');
    expect(res.body.error).toMatchObject({ code: 'not_found', requestId: 'abc 123' });
  });

  it('rejects unknown fields and bad values with 400 details per field', async () => {
    const res = await api.http.post('/jobs').send({ type: 'diag.echo', bogus: 1, backoff: { type: 'x' }, priority: 101 });
    expect(res.status).toBe(400);
    expect(res.body.error.code).toBe('validation_failed');
    const paths = res.body.error.details.map((d: { path: string }) => d.path).sort();
    expect(paths).toEqual(['backoff.type', 'bogus', 'priority']);
  });

  it('rejects an unregistered type listing the known types', async () => {
    const res = await api.http.post('/jobs').send({ type: 'no_such_type' });
    expect(res.status).toBe(400);
    expect(res.body.error.details[0].path).toBe('type');
    expect(res.body.error.details[0].message).toContain('diag.echo');
  });

  it('malformed JSON → 400, 10 MB body → 413, both in the envelope', async () => {
    const bad = await api.http.post('/jobs').set('Content-Type', 'application/json').send('{"type":');
    expect(bad.status).toBe(400);
    expect(bad.body.error.code).toBe('validation_failed');
    // fetch (like most clients) keeps sending while the server answers: the
    // body must be read, or the client sees a broken pipe instead of the 413.
    const big = await fetch(api.url + '/jobs', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ type: 'diag.echo', payload: { d: 'x'.repeat(10_000_000) } }) });
    expect(big.status).toBe(413);
    expect(((await big.json()) as { error: { code: string } }).error.code).toBe('payload_too_large');
    const batch = await fetch(api.url + '/jobs/batch', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ jobs: [{ type: 'diag.echo', payload: { d: 'x'.repeat(10_000_000) } }] }) });
    expect(batch.status).toBe(413);
  });

  it('batch: validates all first and names the index', async () => {
    const bad = await api.http.post('/jobs/batch').send({ jobs: [{ type: 'diag.echo' }, { type: 'diag.echo', delayMs: -1 }] });
    expect(bad.status).toBe(400);
    expect(bad.body.error.details.map((d: { path: string }) => d.path)).toEqual(['jobs.1.delayMs']);
    const ok = await api.http.post('/jobs/batch').send({ jobs: [{ type: 'diag.echo' }, { type: 'diag.echo', delayMs: 60000 }] });
    expect(ok.status).toBe(201);
    expect(ok.body.jobs.map((j: { status: string }) => j.status)).toEqual(['waiting', 'delayed']);
  });

  it('20 concurrent identical POSTs with one idempotency key → one job, same id everywhere', async () => {
    const body = { type: 'diag.echo', payload: { n: 1 }, idempotencyKey: 'k-20' };
    const res = await Promise.all(Array.from({ length: 20 }, () => api.http.post('/jobs').send(body)));
    const ids = new Set(res.map((r) => r.body.id));
    expect(ids.size).toBe(1);
    expect(res.filter((r) => r.status === 201)).toHaveLength(1);
    const replayed = res.filter((r) => r.status === 200);
    expect(replayed).toHaveLength(19);
    expect(replayed.every((r) => r.headers['idempotent-replayed'] === 'true')).toBe(true);
    const conflict = await api.http.post('/jobs').send({ ...body, payload: { n: 2 } });
    expect(conflict.status).toBe(409);
    expect(conflict.body.error.code).toBe('conflict');
  });
  it('the 201 body is the stored job (rendered from the enqueue reply, not read back)', async () => {
    await api.http.put('/queues/render').send({ defaults: { maxAttempts: 7, timeoutMs: 4321 } }).expect(200);
    for (const body of [
      { type: 'diag.echo', queue: 'render', payload: { s: 'é\t"\\' }, delayMs: 60000, backoff: { type: 'linear', delayMs: 5 }, priority: 'low', idempotencyKey: 'render-1' },
      { type: 'diag.echo', queue: 'render', runAt: '2020-01-01T00:00:00.000Z' },
      { type: 'diag.echo', queue: 'render', runAt: new Date(Date.now() + 3_600_000).toISOString(), maxAttempts: 2, timeoutMs: 10 },
    ]) {
      const created = await api.http.post('/jobs').send(body);
      expect(created.status).toBe(201);
      const stored = await api.http.get(`/jobs/${created.body.id}`);
      expect(created.body).toEqual(stored.body);
    }
  });

  it('an own "constructor" key is an unknown field, not a crash', async () => {
    const res = await api.http.post('/jobs').set('Content-Type', 'application/json').send('{"type":"diag.echo","constructor":null}');
    expect(res.status).toBe(400);
    expect(res.body.error.details).toEqual([{ path: 'constructor', message: 'is not allowed (unknown field)' }]);
  });
  it('a batch over several queues with an idempotency conflict writes nothing in any queue', async () => {
    expect((await api.http.post('/jobs').send({ type: 'diag.echo', queue: 'bq-a', payload: { v: 1 }, idempotencyKey: 'bq-k' })).status).toBe(201);
    // The key reused with another body, next to a job for another queue.
    const clash = await api.http.post('/jobs/batch').send({ jobs: [{ type: 'diag.echo', queue: 'bq-b' }, { type: 'diag.echo', queue: 'bq-a', payload: { v: 2 }, idempotencyKey: 'bq-k' }] });
    expect(clash.status).toBe(409);
    // Twice in one batch with different bodies.
    const twice = await api.http.post('/jobs/batch').send({ jobs: [{ type: 'diag.echo', queue: 'bq-c' }, { type: 'diag.echo', queue: 'bq-d', idempotencyKey: 'k2', payload: { v: 1 } }, { type: 'diag.echo', queue: 'bq-d', idempotencyKey: 'k2', payload: { v: 2 } }] });
    expect(twice.status).toBe(409);
    for (const q of ['bq-b', 'bq-c', 'bq-d']) expect((await api.http.get(`/queues/${q}`)).status).toBe(404);
    // The same body replays, next to a new job elsewhere.
    const ok = await api.http.post('/jobs/batch').send({ jobs: [{ type: 'diag.echo', queue: 'bq-b' }, { type: 'diag.echo', queue: 'bq-a', payload: { v: 1 }, idempotencyKey: 'bq-k' }] });
    expect(ok.status).toBe(201);
  });
});
