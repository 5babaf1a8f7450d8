import { startTestApi, TestApi } from '../../support/http';

/** API.md "Schedules (cron)" over HTTP, on the real stack (in-process app, real Redis + Postgres). */
describe('HTTP /schedules', () => {
  let api: TestApi;
  beforeAll(async () => {
    api = await startTestApi('sched_api');
  });
  afterAll(async () => {
    await api?.close();
  });

  const base = { cron: '*/5 * * * *', queue: 'reports', type: 'diag.echo', payload: { to: 'ops' } };
  const paths = (res: { body: any }) => (res.body.error?.details ?? []).map((d: { path: string }) => d.path).sort();

  it('POST creates a schedule with nextRunAt, defaults filled', async () => {
    const before = Date.now();
    const res = await api.http.post('/schedules').send({ ...base, name: 'five-minutes', priority: 'high', maxAttempts: 2 });
    expect(res.status).toBe(201);
    expect(res.body).toMatchObject({ name: 'five-minutes', cron: '*/5 * * * *', timezone: 'UTC', queue: 'reports', type: 'diag.echo', payload: { to: 'ops' }, priority: 10, maxAttempts: 2, enabled: true, lastRunAt: null });
    expect(res.body.id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    const next = Date.parse(res.body.nextRunAt);
    expect(next).toBeGreaterThan(before);
    expect(next % 300_000).toBe(0);
    expect(next - before).toBeLessThanOrEqual(300_000);
    expect(Date.parse(res.body.createdAt)).toBeGreaterThanOrEqual(before - 1000);
  });

  it('invalid cron or time zone → 400 validation_failed naming the field', async () => {
    const badCron = await api.http.post('/schedules').send({ ...base, name: 'x1', cron: '61 * * * *' });
    expect(badCron.status).toBe(400);
    expect(badCron.body.error.code).toBe('validation_failed');
    expect(paths(badCron)).toEqual(['cron']);
    const sevenFields = await api.http.post('/schedules').send({ ...base, name: 'x2', cron: '* * * * * * *' });
    expect(paths(sevenFields)).toEqual(['cron']);
    const badZone = await api.http.post('/schedules').send({ ...base, name: 'x3', timezone: 'Mars/Olympus' });
    expect(badZone.status).toBe(400);
    expect(paths(badZone)).toEqual(['timezone']);
    const both = await api.http.post('/schedules').send({ ...base, name: 'x4', cron: 'nope', timezone: 'Nowhere' });
    expect(paths(both)).toEqual(['cron', 'timezone']);
    const job = await api.http.post('/schedules').send({ ...base, name: 'x5', queue: 'Bad Queue', priority: 500 });
    expect(paths(job)).toEqual(['priority', 'queue']);
    const unknownType = await api.http.post('/schedules').send({ ...base, name: 'x6', type: 'no.such.handler' });
    expect(paths(unknownType)).toEqual(['type']);
    const unknownField = await api.http.post('/schedules').send({ ...base, name: 'x7', every: 'day' });
    expect(unknownField.status).toBe(400);
    expect(paths(unknownField)).toEqual(['every']);
    const list = await api.http.get('/schedules');
    expect(list.body.map((s: { name: string }) => s.name)).not.toContain('x1');
  });

  it('duplicate name → 409 conflict', async () => {
    expect((await api.http.post('/schedules').send({ ...base, name: 'dup' })).status).toBe(201);
    const again = await api.http.post('/schedules').send({ ...base, name: 'dup' });
    expect(again.status).toBe(409);
    expect(again.body.error.code).toBe('conflict');
  });

  it('GET list and by id; unknown id → 404', async () => {
    const created = (await api.http.post('/schedules').send({ ...base, name: 'get-me' })).body;
    const one = await api.http.get(`/schedules/${created.id}`);
    expect(one.status).toBe(200);
    expect(one.body).toEqual(created);
    const list = await api.http.get('/schedules');
    expect(list.status).toBe(200);
    expect(list.body.find((s: { id: string }) => s.id === created.id)).toEqual(created);
    const missing = await api.http.get('/schedules/01900000-0000-7000-8000-000000000000');
    expect(missing.status).toBe(404);
    expect(missing.body.error.code).toBe('not_found');
    expect((await api.http.get('/schedules/not-a-uuid')).status).toBe(404);
  });

  it('PATCH: disable clears nextRunAt, enable recomputes it, cron is validated, null only where allowed', async () => {
    const created = (await api.http.post('/schedules').send({ ...base, name: 'patch-me', maxAttempts: 5 })).body;
    const off = await api.http.patch(`/schedules/${created.id}`).send({ enabled: false });
    expect(off.status).toBe(200);
    expect(off.body).toMatchObject({ enabled: false, nextRunAt: null, cron: base.cron, payload: base.payload });
    const on = await api.http.patch(`/schedules/${created.id}`).send({ enabled: true, cron: '0 9 * * 1-5', timezone: 'Asia/Kolkata', maxAttempts: null });
    expect(on.status).toBe(200);
    expect(on.body).toMatchObject({ enabled: true, cron: '0 9 * * 1-5', timezone: 'Asia/Kolkata', maxAttempts: null });
    expect(on.body.nextRunAt).toMatch(/T03:30:00\.000Z$/);
    const bad = await api.http.patch(`/schedules/${created.id}`).send({ cron: '* * *' });
    expect(bad.status).toBe(400);
    expect(paths(bad)).toEqual(['cron']);
    const nullCron = await api.http.patch(`/schedules/${created.id}`).send({ cron: null });
    expect(nullCron.status).toBe(400);
    expect(paths(nullCron)).toEqual(['cron']);
    await api.http.post('/schedules').send({ ...base, name: 'taken' });
    expect((await api.http.patch(`/schedules/${created.id}`).send({ name: 'taken' })).status).toBe(409);
    expect((await api.http.patch('/schedules/01900000-0000-7000-8000-000000000000').send({ enabled: false })).status).toBe(404);
    expect((await api.http.get(`/schedules/${created.id}`)).body.cron).toBe('0 9 * * 1-5');
  });

  it('DELETE answers the schedule; afterwards 404', async () => {
    const created = (await api.http.post('/schedules').send({ ...base, name: 'delete-me' })).body;
    const del = await api.http.delete(`/schedules/${created.id}`);
    expect(del.status).toBe(200);
    expect(del.body.id).toBe(created.id);
    expect((await api.http.get(`/schedules/${created.id}`)).status).toBe(404);
    expect((await api.http.delete(`/schedules/${created.id}`)).status).toBe(404);
  });

  it('concurrencyKey (API.md v1.1 flow control per key): stored, shown, changed and removed by PATCH (null), validated, passed to the jobs it enqueues', async () => {
    const created = await api.http.post('/schedules').send({ ...base, name: 'keyed', concurrencyKey: 'tenant-7' });
    expect(created.status).toBe(201);
    expect(created.body.concurrencyKey).toBe('tenant-7');
    expect((await api.http.get(`/schedules/${created.body.id}`)).body.concurrencyKey).toBe('tenant-7');
    // Without one: null.
    expect((await api.http.post('/schedules').send({ ...base, name: 'unkeyed' })).body.concurrencyKey).toBeNull();
    // A manual run enqueues the schedule's job with its key.
    const run = await api.http.post(`/schedules/${created.body.id}/run`);
    expect(run.status).toBe(201);
    expect(run.body.concurrencyKey).toBe('tenant-7');
    expect((await api.http.get(`/jobs/${run.body.id}`)).body.concurrencyKey).toBe('tenant-7');
    // PATCH: other fields keep it; a new one replaces it; null removes it.
    expect((await api.http.patch(`/schedules/${created.body.id}`).send({ priority: 3 })).body.concurrencyKey).toBe('tenant-7');
    expect((await api.http.patch(`/schedules/${created.body.id}`).send({ concurrencyKey: 'k'.repeat(128) })).body.concurrencyKey).toBe('k'.repeat(128));
    const removed = await api.http.patch(`/schedules/${created.body.id}`).send({ concurrencyKey: null });
    expect(removed.status).toBe(200);
    expect(removed.body.concurrencyKey).toBeNull();
    expect((await api.http.post(`/schedules/${created.body.id}/run`)).body.concurrencyKey).toBeNull();
    for (const bad of ['', 'k'.repeat(129), 42]) {
      const r = await api.http.post('/schedules').send({ ...base, name: 'bad-key', concurrencyKey: bad });
      expect([r.status, paths(r)]).toEqual([400, ['concurrencyKey']]);
      const p = await api.http.patch(`/schedules/${created.body.id}`).send({ concurrencyKey: bad });
      expect([p.status, paths(p)]).toEqual([400, ['concurrencyKey']]);
    }
    // Debounce is not a schedule field.
    expect(paths(await api.http.post('/schedules').send({ ...base, name: 'debounced', debounce: { key: 'k', windowMs: 1000 } }))).toEqual(['debounce']);
  });

  it('GET /schedules/preview: DST rules, Kolkata, defaults and validation', async () => {
    const spring = await api.http.get('/schedules/preview').query({ cron: '30 2 * * *', timezone: 'America/New_York', from: '2024-03-09T00:00:00Z', count: 3 });
    expect(spring.status).toBe(200);
    expect(spring.body).toEqual({ runs: ['2024-03-09T07:30:00.000Z', '2024-03-10T07:00:00.000Z', '2024-03-11T06:30:00.000Z'] });
    const fall = await api.http.get('/schedules/preview').query({ cron: '30 1 * * *', timezone: 'America/New_York', from: '2024-11-02T12:00:00Z', count: 2 });
    expect(fall.body.runs).toEqual(['2024-11-03T05:30:00.000Z', '2024-11-04T06:30:00.000Z']);
    const kolkata = await api.http.get('/schedules/preview').query({ cron: '0 9 * * 1-5', timezone: 'Asia/Kolkata', from: '2024-03-08T00:00:00Z' });
    expect(kolkata.body.runs).toHaveLength(5);
    expect(kolkata.body.runs[1]).toBe('2024-03-11T03:30:00.000Z');
    const utc = await api.http.get('/schedules/preview').query({ cron: '0 0 1 * *' });
    expect(utc.body.runs).toHaveLength(5);
    expect(Date.parse(utc.body.runs[0])).toBeGreaterThan(Date.now());
    expect(paths(await api.http.get('/schedules/preview').query({ cron: '0 0 * * *', count: 0 }))).toEqual(['count']);
    expect(paths(await api.http.get('/schedules/preview').query({ cron: '0 0 * * *', count: 101 }))).toEqual(['count']);
    expect(paths(await api.http.get('/schedules/preview').query({ cron: '0 0 * * *', timezone: 'Nope/Zone' }))).toEqual(['timezone']);
    expect(paths(await api.http.get('/schedules/preview').query({ cron: 'x' }))).toEqual(['cron']);
    expect(paths(await api.http.get('/schedules/preview'))).toEqual(['cron']);
  });
});
