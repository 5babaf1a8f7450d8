import { startTestApi, TestApi } from '../support/http';

/** API.md v1.3 "Light answers on enqueue: `Prefer: return=minimal` (RFC 7240)". */
describe('Prefer: return=minimal on POST /jobs and /jobs/batch (e2e)', () => {
  let api: TestApi;
  beforeAll(async () => {
    api = await startTestApi('e2e-prefer');
  });
  afterAll(async () => {
    await api?.close();
  });

  it('single: 201 {id, status} with Preference-Applied; the job is the same as a full read', async () => {
    const res = await api.http.post('/jobs').set('Prefer', 'return=minimal').send({ type: 'diag.echo', queue: 'pm-a', payload: { secret: 'p1' } });
    expect(res.status).toBe(201);
    expect(res.headers['preference-applied']).toBe('return=minimal');
    expect(Object.keys(res.body).sort()).toEqual(['id', 'status']);
    expect(res.body.status).toBe('waiting');
    const full = await api.http.get(`/jobs/${res.body.id}`);
    expect(full.status).toBe(200);
    expect(full.body.payload).toEqual({ secret: 'p1' });
  });

  it('without the header, or with return=representation: the full job and no Preference-Applied', async () => {
    for (const prefer of [undefined, 'return=representation', 'respond-async']) {
      const req = api.http.post('/jobs');
      if (prefer) req.set('Prefer', prefer);
      const res = await req.send({ type: 'diag.echo', queue: 'pm-a', payload: { n: 1 } });
      expect(res.status).toBe(201);
      expect(res.headers['preference-applied']).toBeUndefined();
      expect(res.body).toMatchObject({ type: 'diag.echo', queue: 'pm-a', status: 'waiting', payload: { n: 1 } });
    }
  });

  it('batch: {jobs: [{id, status}]} in request order, the same ids as the jobs', async () => {
    const jobs = [0, 1, 2].map((i) => ({ type: 'diag.echo', queue: 'pm-b', payload: { i }, ...(i === 1 ? { delayMs: 60_000 } : {}) }));
    const res = await api.http.post('/jobs/batch').set('Prefer', 'return=minimal').send({ jobs });
    expect(res.status).toBe(201);
    expect(res.headers['preference-applied']).toBe('return=minimal');
    expect(res.body.jobs).toHaveLength(3);
    for (const j of res.body.jobs) expect(Object.keys(j).sort()).toEqual(['id', 'status']);
    expect(res.body.jobs.map((j: { status: string }) => j.status)).toEqual(['waiting', 'delayed', 'waiting']);
    for (const [i, j] of res.body.jobs.entries()) expect((await api.http.get(`/jobs/${j.id}`)).body.payload).toEqual({ i });
  });

  it('replay: 200, Idempotent-Replayed and Preference-Applied, the first job id', async () => {
    const body = { type: 'diag.echo', queue: 'pm-c', idempotencyKey: 'pm-key-1', payload: { a: 1 } };
    const first = await api.http.post('/jobs').set('Prefer', 'return=minimal').send(body);
    expect(first.status).toBe(201);
    const again = await api.http.post('/jobs').set('Prefer', 'return=minimal').send(body);
    expect(again.status).toBe(200);
    expect(again.headers['idempotent-replayed']).toBe('true');
    expect(again.headers['preference-applied']).toBe('return=minimal');
    expect(again.body).toEqual({ id: first.body.id, status: 'waiting' });
    // In a batch too: the replayed job keeps its place in the order.
    const batch = await api.http.post('/jobs/batch').set('Prefer', 'return=minimal').send({ jobs: [{ type: 'diag.echo', queue: 'pm-c' }, body] });
    expect(batch.status).toBe(201);
    expect(batch.body.jobs[1]).toEqual({ id: first.body.id, status: 'waiting' });
    // A different body under the key: the same 409 as without the header.
    const clash = await api.http.post('/jobs').set('Prefer', 'return=minimal').send({ ...body, payload: { a: 2 } });
    expect(clash.status).toBe(409);
    expect(clash.body.error.code).toBe('conflict');
  });

  it('debounce: 200, Sluice-Debounced and Preference-Applied, the debounced job id', async () => {
    const body = (n: number) => ({ type: 'diag.echo', queue: 'pm-d', payload: { n }, debounce: { key: 'pm-deb', windowMs: 60_000 } });
    const first = await api.http.post('/jobs').set('Prefer', 'return=minimal').send(body(1));
    expect(first.status).toBe(201);
    const second = await api.http.post('/jobs').set('Prefer', 'return=minimal').send(body(2));
    expect(second.status).toBe(200);
    expect(second.headers['sluice-debounced']).toBe('true');
    expect(second.headers['preference-applied']).toBe('return=minimal');
    expect(second.body).toEqual({ id: first.body.id, status: first.body.status });
    expect((await api.http.get(`/jobs/${first.body.id}`)).body.payload).toEqual({ n: 2 });
  });

  it('errors are unchanged by the header: 400 in the envelope, no Preference-Applied', async () => {
    const res = await api.http.post('/jobs/batch').set('Prefer', 'return=minimal').send({ jobs: [{ type: 'diag.echo', priority: 101 }] });
    expect(res.status).toBe(400);
    expect(res.body.error.code).toBe('validation_failed');
    expect(res.headers['preference-applied']).toBeUndefined();
  });
});
