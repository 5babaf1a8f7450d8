import { startTestApi, TestApi } from '../support/http';

const ZERO = { waiting: 0, delayed: 0, active: 0, completed: 0, failed: 0, cancelled: 0 };

describe('queues (e2e)', () => {
  let api: TestApi;
  beforeAll(async () => {
    api = await startTestApi('e2e-queues');
  });
  afterAll(async () => {
    await api?.close();
  });

  it('GET /queues/:name of a queue that does not exist → 404; a bad name → 404 too', async () => {
    const res = await api.http.get('/queues/never-seen');
    expect(res.status).toBe(404);
    expect(res.body.error.code).toBe('not_found');
    expect((await api.http.get('/queues/Bad%20Name')).status).toBe(404);
  });

  it('a queue exists once given a job: listed with exact live counts and the effective defaults', async () => {
    expect((await api.http.post('/jobs').send({ type: 'diag.echo', queue: 'q-jobs' })).status).toBe(201);
    expect((await api.http.post('/jobs').send({ type: 'diag.echo', queue: 'q-jobs', delayMs: 60_000 })).status).toBe(201);
    const one = await api.http.get('/queues/q-jobs');
    expect(one.status).toBe(200);
    expect(one.body).toEqual({
      name: 'q-jobs',
      paused: false,
      maxConcurrency: null,
      rateLimit: null,
      defaults: { maxAttempts: 3, backoff: { type: 'exponential', delayMs: 2000, maxDelayMs: 3_600_000, jitter: 'equal' }, timeoutMs: 600_000 },
      external: false,
      keyConcurrency: null,
      keyRateLimit: null,
      fairness: 'fifo',
      agingMs: null,
      summaryIncludesPayload: false,
      counts: { ...ZERO, waiting: 1, delayed: 1 },
      payloadSearch: false,
    });
    const list = await api.http.get('/queues');
    expect(list.status).toBe(200);
    expect(Array.isArray(list.body)).toBe(true);
    expect(list.body.find((q: { name: string }) => q.name === 'q-jobs')).toEqual(one.body);
  });

  it('PUT creates and configures a queue; only the fields sent change; null removes a limit', async () => {
    const put = await api.http.put('/queues/q-conf').send({
      maxConcurrency: 3,
      rateLimit: { max: 10, durationMs: 1000 },
      defaults: { maxAttempts: 5, backoff: { type: 'fixed', delayMs: 100 }, timeoutMs: 5000 },
      external: true,
    });
    expect(put.status).toBe(200);
    expect(put.body).toMatchObject({
      name: 'q-conf',
      paused: false,
      maxConcurrency: 3,
      rateLimit: { max: 10, durationMs: 1000 },
      defaults: { maxAttempts: 5, backoff: { type: 'fixed', delayMs: 100, maxDelayMs: 3_600_000, jitter: 'equal' }, timeoutMs: 5000 },
      external: true,
      counts: ZERO,
    });
    // Jobs take the queue's defaults; an external queue accepts any type.
    const job = await api.http.post('/jobs').send({ type: 'any.type', queue: 'q-conf' });
    expect(job.status).toBe(201);
    expect(job.body).toMatchObject({ maxAttempts: 5, timeoutMs: 5000, backoff: { type: 'fixed', delayMs: 100 } });

    const put2 = await api.http.put('/queues/q-conf').send({ maxConcurrency: null, rateLimit: null, defaults: { backoff: { delayMs: 250 } } });
    expect(put2.status).toBe(200);
    expect(put2.body).toMatchObject({ maxConcurrency: null, rateLimit: null, external: true, defaults: { maxAttempts: 5, backoff: { type: 'fixed', delayMs: 250 } } });
    expect(put2.body.counts.waiting).toBe(1);
    expect((await api.http.get('/queues/q-conf')).body).toEqual(put2.body);
    // An empty body changes nothing.
    const put3 = await api.http.put('/queues/q-conf').send({});
    expect(put3.status).toBe(200);
    expect(put3.body).toEqual(put2.body);
  });

  it('PUT validation: bad name, bad values, unknown fields, inconsistent backoff → 400 with details', async () => {
    const name = await api.http.put('/queues/Bad_Name').send({ maxConcurrency: 1 });
    expect(name.status).toBe(400);
    expect(name.body.error).toMatchObject({ code: 'validation_failed', details: [{ path: 'name' }] });
    expect((await api.http.put(`/queues/${'a'.repeat(65)}`).send({})).status).toBe(400);

    const bad = await api.http.put('/queues/q-bad').send({
      maxConcurrency: 0,
      rateLimit: { max: 0, durationMs: 1.5 },
      defaults: { maxAttempts: 101, timeoutMs: 0 },
      external: 'yes',
      paused: true,
    });
    expect(bad.status).toBe(400);
    const paths = bad.body.error.details.map((d: { path: string }) => d.path).sort();
    expect(paths).toEqual(['defaults.maxAttempts', 'defaults.timeoutMs', 'external', 'maxConcurrency', 'paused', 'rateLimit.durationMs', 'rateLimit.max']);
    const backoff = await api.http.put('/queues/q-bad').send({ defaults: { backoff: { delayMs: 5000, maxDelayMs: 10 } } });
    expect(backoff.status).toBe(400);
    expect(backoff.body.error.details[0].path).toBe('defaults.backoff');
    const notObject = await api.http.put('/queues/q-bad').send({ rateLimit: 5, defaults: null });
    expect(notObject.status).toBe(400);
    // Nothing was created by the refused calls.
    expect((await api.http.get('/queues/q-bad')).status).toBe(404);
  });

  it('pause creates a queue with no jobs; paused queues keep accepting jobs; resume', async () => {
    const p = await api.http.post('/queues/q-pause/pause');
    expect(p.status).toBe(200);
    expect(p.body).toMatchObject({ name: 'q-pause', paused: true, counts: ZERO });
    expect((await api.http.get('/queues/q-pause')).body.paused).toBe(true);
    const job = await api.http.post('/jobs').send({ type: 'diag.echo', queue: 'q-pause' });
    expect(job.status).toBe(201);
    expect(job.body.status).toBe('waiting');
    const r = await api.http.post('/queues/q-pause/resume');
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({ paused: false, counts: { ...ZERO, waiting: 1 } });
    expect((await api.http.post('/queues/NOPE/pause')).status).toBe(400);
    // Resuming a queue that never existed is a 404 and does not create it (only pause does).
    const unknown = await api.http.post('/queues/q-resume-new/resume');
    expect(unknown.status).toBe(404);
    expect(unknown.body.error.code).toBe('not_found');
    expect((await api.http.get('/queues/q-resume-new')).status).toBe(404);
  });
});
