import { randomBytes } from 'node:crypto';
import { startTestApi, type TestApi } from '../support/http';
import { waitUntil } from '../support/timing';

/**
 * Flow control per key over HTTP (API.md v1.1 "Flow control per key", v1.2
 * "debounce" and "overrides for one key"; issue 20), on the real stack:
 * - a job's `concurrencyKey` (POST /jobs, each /jobs/batch item) is validated,
 *   answered, read back live from Redis and from the PostgreSQL history;
 * - `debounce` is validated (its engine part is in the lead's scripts);
 * - PUT /queues/:name takes keyConcurrency, keyRateLimit, fairness, agingMs;
 *   GET shows them (fairness effective);
 * - GET /queues/:name/keys, PUT and DELETE /queues/:name/keys/:key: 404 for an
 *   unknown queue, 400 for a bad key, limit or body, the limits in force;
 * - with AUTH on: a viewer may list keys but not set or delete an override;
 *   a key of one project's queue is invisible from another; every override
 *   call is in the operator log with its queue/key target, refusals too.
 */
const paths = (res: { body: any }) => [...new Set(((res.body.error?.details ?? []) as { path: string }[]).map((d) => d.path))].sort();
const expect400 = (res: { status: number; body: any }, ...fields: string[]) => {
  expect({ status: res.status, code: res.body.error?.code, paths: paths(res) }).toEqual({ status: 400, code: 'validation_failed', paths: fields.sort() });
};
const expect404 = (res: { status: number; body: any }) => expect({ status: res.status, code: res.body.error?.code }).toEqual({ status: 404, code: 'not_found' });

describe('flow control per key (AUTH off)', () => {
  let api: TestApi;
  beforeAll(async () => {
    api = await startTestApi('e2e-flow', { ROLE: 'api,audit' });
  });
  afterAll(async () => {
    await api?.close();
  });

  it('POST /jobs and /jobs/batch: concurrencyKey is answered, read back live and from PostgreSQL; absent = null', async () => {
    const one = await api.http.post('/jobs').send({ type: 'diag.echo', queue: 'fc-jobs', concurrencyKey: 'customer-42' });
    expect(one.status).toBe(201);
    expect(one.body.concurrencyKey).toBe('customer-42');
    const plain = await api.http.post('/jobs').send({ type: 'diag.echo', queue: 'fc-jobs' });
    expect(plain.body.concurrencyKey).toBeNull();
    const batch = await api.http.post('/jobs/batch').send({
      jobs: [
        { type: 'diag.echo', queue: 'fc-jobs', concurrencyKey: 'k/é 😀' },
        { type: 'diag.echo', queue: 'fc-jobs', concurrencyKey: 'k'.repeat(128) },
      ],
    });
    expect(batch.status).toBe(201);
    expect(batch.body.jobs.map((j: { concurrencyKey: string }) => j.concurrencyKey)).toEqual(['k/é 😀', 'k'.repeat(128)]);
    // Live (Redis).
    expect((await api.http.get(`/jobs/${one.body.id}`)).body.concurrencyKey).toBe('customer-42');
    expect((await api.http.get(`/jobs/${batch.body.jobs[0].id}`)).body.concurrencyKey).toBe('k/é 😀');
    // The history (PostgreSQL, through the mirror: the enqueued event's ck).
    const want = new Map<string, string | null>([
      [one.body.id, 'customer-42'],
      [plain.body.id, null],
      [batch.body.jobs[0].id, 'k/é 😀'],
      [batch.body.jobs[1].id, 'k'.repeat(128)],
    ]);
    const listed = await waitUntil('the jobs mirrored', async () => {
      const items: { id: string; concurrencyKey: string | null }[] = (await api.http.get('/jobs').query({ queue: 'fc-jobs' })).body.items;
      return items.length === want.size ? items : undefined;
    }, 20_000, 100);
    expect(new Map(listed.map((j) => [j.id, j.concurrencyKey]))).toEqual(want);
    const [row] = await api.db.dataSource.query(`SELECT concurrency_key FROM jobs WHERE id = $1`, [one.body.id]);
    expect(row).toEqual({ concurrency_key: 'customer-42' });
  });

  it('concurrencyKey and debounce are validated, each 400 naming its field (and the batch index)', async () => {
    const job = (extra: object) => ({ type: 'diag.echo', queue: 'fc-bad', ...extra });
    expect400(await api.http.post('/jobs').send(job({ concurrencyKey: '' })), 'concurrencyKey');
    expect400(await api.http.post('/jobs').send(job({ concurrencyKey: 'k'.repeat(129) })), 'concurrencyKey');
    expect400(await api.http.post('/jobs').send(job({ concurrencyKey: 5 })), 'concurrencyKey');
    expect400(await api.http.post('/jobs').send(job({ concurrencyKey: null })), 'concurrencyKey');
    expect400(await api.http.post('/jobs').send(job({ concurrencyKey: 'a\u0000b' })), 'concurrencyKey');
    expect400(await api.http.post('/jobs').send(job({ debounce: { key: 'k', windowMs: 99 } })), 'debounce.windowMs');
    expect400(await api.http.post('/jobs').send(job({ debounce: { key: 'k', windowMs: 86_400_001 } })), 'debounce.windowMs');
    expect400(await api.http.post('/jobs').send(job({ debounce: { key: 'k', windowMs: 1000, maxWaitMs: 999 } })), 'debounce.maxWaitMs');
    expect400(await api.http.post('/jobs').send(job({ debounce: { key: 'k', windowMs: 1000, maxWaitMs: 604_800_001 } })), 'debounce.maxWaitMs');
    expect400(await api.http.post('/jobs').send(job({ debounce: { key: '', windowMs: 1000 } })), 'debounce.key');
    expect400(await api.http.post('/jobs').send(job({ debounce: { key: 'k'.repeat(129), windowMs: 1000 } })), 'debounce.key');
    expect400(await api.http.post('/jobs').send(job({ debounce: { windowMs: 1000 } })), 'debounce.key');
    expect400(await api.http.post('/jobs').send(job({ debounce: { key: 'k', windowMs: 1000, every: 1 } })), 'debounce.every');
    expect400(await api.http.post('/jobs').send(job({ debounce: 'k' })), 'debounce');
    const both = await api.http.post('/jobs').send(job({ debounce: { key: 'k', windowMs: 1000 }, idempotencyKey: 'i-1' }));
    expect400(both, 'debounce');
    expect(both.body.error.details[0].message).toMatch(/idempotencyKey/);
    expect400(await api.http.post('/jobs/batch').send({ jobs: [job({}), job({ concurrencyKey: '' }), job({ debounce: { key: 'k', windowMs: 1 } })] }), 'jobs.1.concurrencyKey', 'jobs.2.debounce.windowMs');
    expect400(await api.http.post('/jobs/batch').send({ jobs: [job({ debounce: { key: 'k', windowMs: 100 }, idempotencyKey: 'i' })] }), 'jobs.0.debounce');
    // Nothing of the refused calls was enqueued.
    expect((await api.http.get('/queues/fc-bad')).status).toBe(404);
    // The bounds themselves are accepted.
    const ok = await api.http.post('/jobs').send(job({ debounce: { key: 'k'.repeat(128), windowMs: 100, maxWaitMs: 604_800_000 } }));
    expect([201, 200]).toContain(ok.status);
  });

  it('PUT /queues/:name: keyConcurrency, keyRateLimit, fairness, agingMs are stored, shown and reset with null', async () => {
    const fresh = await api.http.put('/queues/fc-q').send({});
    expect(fresh.status).toBe(200);
    expect(fresh.body).toMatchObject({ keyConcurrency: null, keyRateLimit: null, fairness: 'fifo', agingMs: null });
    const put = await api.http.put('/queues/fc-q').send({ keyConcurrency: 3, keyRateLimit: { max: 10, durationMs: 60_000 }, fairness: 'round_robin', agingMs: 5000 });
    expect(put.status).toBe(200);
    expect(put.body).toMatchObject({ keyConcurrency: 3, keyRateLimit: { max: 10, durationMs: 60_000 }, fairness: 'round_robin', agingMs: 5000 });
    expect((await api.http.get('/queues/fc-q')).body).toEqual(put.body);
    expect((await api.http.get('/queues')).body.find((q: { name: string }) => q.name === 'fc-q')).toEqual(put.body);
    // Only the fields sent change.
    expect((await api.http.put('/queues/fc-q').send({ keyConcurrency: 1 })).body).toMatchObject({ keyConcurrency: 1, keyRateLimit: { max: 10 }, fairness: 'round_robin', agingMs: 5000 });
    expect((await api.http.put('/queues/fc-q').send({ fairness: 'fifo' })).body.fairness).toBe('fifo');
    const reset = await api.http.put('/queues/fc-q').send({ keyConcurrency: null, keyRateLimit: null, fairness: null, agingMs: null });
    expect(reset.status).toBe(200);
    expect(reset.body).toMatchObject({ keyConcurrency: null, keyRateLimit: null, fairness: 'fifo', agingMs: null });
    // The default fairness once the queue has had a keyed job: round_robin.
    expect((await api.http.post('/jobs').send({ type: 'diag.echo', queue: 'fc-q', concurrencyKey: 'a' })).status).toBe(201);
    expect((await api.http.get('/queues/fc-q')).body.fairness).toBe('round_robin');
    expect((await api.http.put('/queues/fc-q').send({ fairness: 'fifo' })).body.fairness).toBe('fifo');
    expect((await api.http.put('/queues/fc-q').send({ fairness: null })).body.fairness).toBe('round_robin');
  });

  it('PUT /queues/:name: the new fields are validated, each 400 naming its field; nothing changes', async () => {
    const q = '/queues/fc-q-bad';
    expect400(await api.http.put(q).send({ keyConcurrency: 0 }), 'keyConcurrency');
    expect400(await api.http.put(q).send({ keyConcurrency: 100_001 }), 'keyConcurrency');
    expect400(await api.http.put(q).send({ keyConcurrency: 1.5 }), 'keyConcurrency');
    expect400(await api.http.put(q).send({ keyRateLimit: { max: 0, durationMs: 1000 } }), 'keyRateLimit.max');
    expect400(await api.http.put(q).send({ keyRateLimit: { max: 10_001, durationMs: 1000 } }), 'keyRateLimit.max');
    expect400(await api.http.put(q).send({ keyRateLimit: { max: 1, durationMs: 0 } }), 'keyRateLimit.durationMs');
    expect400(await api.http.put(q).send({ keyRateLimit: { max: 1, durationMs: 86_400_001 } }), 'keyRateLimit.durationMs');
    expect400(await api.http.put(q).send({ keyRateLimit: { max: 1 } }), 'keyRateLimit.durationMs');
    expect400(await api.http.put(q).send({ keyRateLimit: { max: 1, durationMs: 1, burst: 2 } }), 'keyRateLimit.burst');
    expect400(await api.http.put(q).send({ keyRateLimit: 5 }), 'keyRateLimit');
    expect400(await api.http.put(q).send({ fairness: 'lifo' }), 'fairness');
    expect400(await api.http.put(q).send({ fairness: 1 }), 'fairness');
    expect400(await api.http.put(q).send({ agingMs: 999 }), 'agingMs');
    expect400(await api.http.put(q).send({ agingMs: 86_400_001 }), 'agingMs');
    expect400(await api.http.put(q).send({ keyConcurrency: 0, agingMs: 1, fairness: 'x' }), 'keyConcurrency', 'agingMs', 'fairness');
    expect((await api.http.get(q)).status).toBe(404);
    // At the bounds: accepted.
    const edge = await api.http.put(q).send({ keyConcurrency: 100_000, keyRateLimit: { max: 10_000, durationMs: 86_400_000 }, agingMs: 86_400_000 });
    expect(edge.status).toBe(200);
    expect((await api.http.put(q).send({ keyConcurrency: 1, keyRateLimit: { max: 1, durationMs: 1 }, agingMs: 1000 })).status).toBe(200);
  });

  it('keys routes: an unknown queue (or a name that cannot be one) → 404 on all three, nothing created', async () => {
    for (const name of ['fc-never', 'Bad%20Name', 'x'.repeat(65)]) {
      expect404(await api.http.get(`/queues/${name}/keys`));
      expect404(await api.http.put(`/queues/${name}/keys/k1`).send({ concurrency: 1 }));
      expect404(await api.http.delete(`/queues/${name}/keys/k1`));
    }
    expect((await api.http.get('/queues/fc-never')).status).toBe(404);
  });

  it('keys routes: a bad key, limit or body → 400 naming it', async () => {
    expect((await api.http.put('/queues/fc-keys').send({ keyConcurrency: 2, keyRateLimit: { max: 50, durationMs: 60_000 } })).status).toBe(200);
    const long = encodeURIComponent('k'.repeat(129));
    expect400(await api.http.put(`/queues/fc-keys/keys/${long}`).send({ concurrency: 1 }), 'key');
    expect400(await api.http.delete(`/queues/fc-keys/keys/${long}`), 'key');
    for (const limit of ['0', '1001', 'x', '1e1', '0x10', '-1']) expect400(await api.http.get(`/queues/fc-keys/keys?limit=${limit}`), 'limit');
    expect400(await api.http.get('/queues/fc-keys/keys?limit=5&other=1'), 'other');
    const k = '/queues/fc-keys/keys/k1';
    expect400(await api.http.put(k).send({ concurrency: 0 }), 'concurrency');
    expect400(await api.http.put(k).send({ concurrency: 100_001 }), 'concurrency');
    expect400(await api.http.put(k).send({ concurrency: '5' }), 'concurrency');
    expect400(await api.http.put(k).send({ rateLimit: { max: 10_001, durationMs: 1 } }), 'rateLimit.max');
    expect400(await api.http.put(k).send({ rateLimit: { max: 1, durationMs: 86_400_001 } }), 'rateLimit.durationMs');
    expect400(await api.http.put(k).send({ rateLimit: 'fast' }), 'rateLimit');
    expect400(await api.http.put(k).send({ concurrency: 1, keyConcurrency: 1 }), 'keyConcurrency');
    // Nothing was set by the refused calls.
    expect((await api.http.get('/queues/fc-keys/keys')).body).toEqual({ items: [] });
  });

  it('keys routes: set, merge, list with the limits in force, remove (idempotent); keys with / and Unicode', async () => {
    const q = 'fc-keys2';
    expect((await api.http.put(`/queues/${q}`).send({ keyConcurrency: 2, keyRateLimit: { max: 50, durationMs: 60_000 } })).status).toBe(200);
    for (let i = 0; i < 3; i++) expect((await api.http.post('/jobs').send({ type: 'diag.echo', queue: q, concurrencyKey: 'busy' })).status).toBe(201);
    expect((await api.http.post('/jobs').send({ type: 'diag.echo', queue: q, concurrencyKey: 'quiet' })).status).toBe(201);
    const listed = await api.http.get(`/queues/${q}/keys`);
    expect(listed.status).toBe(200);
    expect(listed.body.items).toEqual([
      { key: 'busy', waiting: 3, active: 0, overrides: null, limits: { concurrency: 2, rateLimit: { max: 50, durationMs: 60_000 } } },
      { key: 'quiet', waiting: 1, active: 0, overrides: null, limits: { concurrency: 2, rateLimit: { max: 50, durationMs: 60_000 } } },
    ]);
    expect((await api.http.get(`/queues/${q}/keys?limit=1`)).body.items.map((k: { key: string }) => k.key)).toEqual(['busy']);

    const set = await api.http.put(`/queues/${q}/keys/busy`).send({ concurrency: 10 });
    expect(set.status).toBe(200);
    expect(set.body).toEqual({ key: 'busy', waiting: 3, active: 0, overrides: { concurrency: 10, rateLimit: null }, limits: { concurrency: 10, rateLimit: { max: 50, durationMs: 60_000 } } });
    const merged = await api.http.put(`/queues/${q}/keys/busy`).send({ rateLimit: { max: 5, durationMs: 1000 } });
    expect(merged.body).toMatchObject({ overrides: { concurrency: 10, rateLimit: { max: 5, durationMs: 1000 } }, limits: { concurrency: 10, rateLimit: { max: 5, durationMs: 1000 } } });
    expect((await api.http.put(`/queues/${q}/keys/busy`).send({})).body).toEqual(merged.body);
    const cleared = await api.http.put(`/queues/${q}/keys/busy`).send({ concurrency: null });
    expect(cleared.body).toMatchObject({ overrides: { concurrency: null, rateLimit: { max: 5, durationMs: 1000 } }, limits: { concurrency: 2, rateLimit: { max: 5, durationMs: 1000 } } });
    expect((await api.http.get(`/queues/${q}/keys`)).body.items[0]).toEqual(cleared.body);

    // A key with no jobs yet may get an override; it is listed after the busy ones. `/` travels as %2F.
    const odd = 'tenant/42 é 😀';
    const setOdd = await api.http.put(`/queues/${q}/keys/${encodeURIComponent(odd)}`).send({ concurrency: 1 });
    expect(setOdd.status).toBe(200);
    expect(setOdd.body).toEqual({ key: odd, waiting: 0, active: 0, overrides: { concurrency: 1, rateLimit: null }, limits: { concurrency: 1, rateLimit: { max: 50, durationMs: 60_000 } } });
    expect((await api.http.get(`/queues/${q}/keys`)).body.items.map((k: { key: string }) => k.key)).toEqual(['busy', 'quiet', odd]);
    const max = 'm'.repeat(128);
    expect((await api.http.put(`/queues/${q}/keys/${max}`).send({ concurrency: 100_000, rateLimit: { max: 10_000, durationMs: 86_400_000 } })).status).toBe(200);

    // Removing: overrides null, the queue's limits again; twice is the same answer.
    const del = await api.http.delete(`/queues/${q}/keys/busy`);
    expect(del.status).toBe(200);
    expect(del.body).toEqual({ key: 'busy', waiting: 3, active: 0, overrides: null, limits: { concurrency: 2, rateLimit: { max: 50, durationMs: 60_000 } } });
    expect((await api.http.delete(`/queues/${q}/keys/busy`)).body).toEqual(del.body);
    expect((await api.http.delete(`/queues/${q}/keys/never-had-one`)).body).toEqual({ key: 'never-had-one', waiting: 0, active: 0, overrides: null, limits: del.body.limits });
    expect((await api.http.delete(`/queues/${q}/keys/${encodeURIComponent(odd)}`)).body.overrides).toBeNull();
    expect((await api.http.get(`/queues/${q}/keys`)).body.items.map((k: { key: string }) => k.key)).toEqual(['busy', 'quiet', max]);
    // The queue's limits removed: limits null where no override applies.
    expect((await api.http.put(`/queues/${q}`).send({ keyConcurrency: null, keyRateLimit: null })).status).toBe(200);
    expect((await api.http.get(`/queues/${q}/keys`)).body.items[0].limits).toEqual({ concurrency: null, rateLimit: null });
  });

  it('Sluice-Debounced is documented on the enqueue 200, with Idempotent-Replayed (either) and Preference-Applied (v1.3)', async () => {
    const doc = (await api.http.get('/docs-json')).body;
    const ok = doc.paths['/jobs'].post.responses['200'];
    expect(Object.keys(ok.headers).sort()).toEqual(['Idempotent-Replayed', 'Preference-Applied', 'Sluice-Debounced', 'X-Request-Id']);
    expect(doc.components.headers['Sluice-Debounced']).toMatchObject({ required: false, schema: { enum: ['true'] } });
  });

  it('debounce: a second enqueue with the key while the job waits → 200, Sluice-Debounced: true, the same job updated (concurrencyKey too); once claimed → a new job (201)', async () => {
    const q = 'fc-debounce';
    expect((await api.http.put(`/queues/${q}`).send({ external: true })).status).toBe(200);
    const first = await api.http.post('/jobs').send({ type: 'x', queue: q, payload: { v: 1 }, concurrencyKey: 'c-1', debounce: { key: 'd', windowMs: 300 } });
    expect(first.status).toBe(201);
    expect(first.headers['sluice-debounced']).toBeUndefined();
    expect(first.body).toMatchObject({ status: 'delayed', concurrencyKey: 'c-1' });
    const second = await api.http.post('/jobs').send({ type: 'x', queue: q, payload: { v: 2 }, concurrencyKey: 'c-2', debounce: { key: 'd', windowMs: 300 } });
    expect(second.status).toBe(200);
    expect(second.headers['sluice-debounced']).toBe('true');
    expect(second.body).toMatchObject({ id: first.body.id, payload: { v: 2 }, concurrencyKey: 'c-2', createdAt: first.body.createdAt });
    expect(Date.parse(second.body.runAt)).toBeGreaterThanOrEqual(Date.parse(first.body.runAt));
    // As stored: the live job, then its history (a debounced event; the key followed the update).
    expect((await api.http.get(`/jobs/${first.body.id}`)).body).toMatchObject({ payload: { v: 2 }, concurrencyKey: 'c-2' });
    await waitUntil('the debounced event mirrored', async () => ((await api.http.get(`/jobs/${first.body.id}/events`)).body.items ?? []).some((e: { event: string }) => e.event === 'debounced') || undefined, 20_000, 100);
    await waitUntil('the key mirrored', async () => ((await api.db.dataSource.query(`SELECT concurrency_key FROM jobs WHERE id = $1`, [first.body.id])) as { concurrency_key: string }[])[0]?.concurrency_key === 'c-2' || undefined, 20_000, 100);
    // Claimed once due: the key is free, the next enqueue makes a new job.
    const claimed = await waitUntil('the job claimable', async () => {
      const c = await api.http.post(`/queues/${q}/claim`).send({ workerId: 'fc-w' });
      return c.body.jobs?.length ? c.body.jobs : undefined;
    }, 10_000, 100);
    expect(claimed.map((j: { id: string }) => j.id)).toEqual([first.body.id]);
    const third = await api.http.post('/jobs').send({ type: 'x', queue: q, payload: { v: 3 }, debounce: { key: 'd', windowMs: 300 } });
    expect(third.status).toBe(201);
    expect(third.body.id).not.toBe(first.body.id);
    expect(third.body.concurrencyKey).toBeNull();
  });
});

describe('flow control per key: roles, projects, operator log (AUTH on)', () => {
  const ROOT = 'sk_' + randomBytes(32).toString('base64url');
  let api: TestApi;
  const key: Record<string, string> = {};
  const as = (who: string, project?: string) => {
    const auth = (r: any) => {
      const withKey = r.set('authorization', `Bearer ${key[who] ?? ROOT}`);
      return project ? withKey.set('x-sluice-project', project) : withKey;
    };
    return {
      get: (url: string) => auth(api.http.get(url)),
      put: (url: string, body: object = {}) => auth(api.http.put(url)).send(body),
      del: (url: string) => auth(api.http.delete(url)),
    };
  };

  beforeAll(async () => {
    api = await startTestApi('e2e-flow-auth', { AUTH: 'on', SLUICE_BOOTSTRAP_ADMIN_KEY: ROOT });
    expect((await api.http.post('/projects').set('authorization', `Bearer ${ROOT}`).send({ name: 'acme' })).status).toBe(201);
    for (const [name, role, project] of [
      ['viewer', 'viewer', 'default'],
      ['producer', 'producer', 'default'],
      ['operator', 'operator', 'default'],
      ['worker', 'worker', 'default'],
      ['acme-op', 'operator', 'acme'],
    ] as const) {
      const r = await api.http.post('/keys').set('authorization', `Bearer ${ROOT}`).set('x-sluice-project', project).send({ name, role });
      expect(r.status).toBe(201);
      key[name] = r.body.secret;
    }
  });
  afterAll(async () => {
    await api?.close();
  });

  it('a viewer may list keys but neither set nor delete an override; producer and worker may do none; operator may all', async () => {
    expect((await as('operator').put('/queues/roles-q', { keyConcurrency: 2 })).status).toBe(200);
    expect((await as('viewer').get('/queues/roles-q/keys')).status).toBe(200);
    for (const who of ['viewer', 'producer', 'worker']) {
      const put = await as(who).put('/queues/roles-q/keys/k', { concurrency: 1 });
      expect([who, put.status, put.body.error?.code]).toEqual([who, 403, 'forbidden']);
      expect([who, (await as(who).del('/queues/roles-q/keys/k')).status]).toEqual([who, 403]);
    }
    for (const who of ['producer', 'worker']) expect([who, (await as(who).get('/queues/roles-q/keys')).status]).toEqual([who, 403]);
    expect((await api.http.get('/queues/roles-q/keys')).status).toBe(401);
    expect((await as('operator').put('/queues/roles-q/keys/k', { concurrency: 1 })).status).toBe(200);
    expect((await as('viewer').get('/queues/roles-q/keys')).body.items).toEqual([
      { key: 'k', waiting: 0, active: 0, overrides: { concurrency: 1, rateLimit: null }, limits: { concurrency: 1, rateLimit: null } },
    ]);
    expect((await as('operator').del('/queues/roles-q/keys/k')).status).toBe(200);
  });

  it("a key of one project's queue is invisible from another: same queue name, separate keys; a queue only the other has → 404", async () => {
    // `shared` in both projects, `acme-only` in acme.
    expect((await as('acme-op').put('/queues/shared', { keyConcurrency: 7 })).status).toBe(200);
    expect((await as('acme-op').put('/queues/acme-only', {})).status).toBe(200);
    expect((await as('operator').put('/queues/shared', { keyConcurrency: 1 })).status).toBe(200);
    expect((await as('acme-op').put('/queues/shared/keys/vip', { concurrency: 50 })).status).toBe(200);
    expect((await as('acme-op').put('/queues/acme-only/keys/secret', { concurrency: 3 })).status).toBe(200);
    // default sees none of acme's keys, and its own `shared` with its own limits.
    expect((await as('operator').get('/queues/shared/keys')).body.items).toEqual([]);
    expect((await as('viewer').get('/queues/shared/keys')).body.items).toEqual([]);
    expect404(await as('operator').get('/queues/acme-only/keys'));
    expect404(await as('operator').put('/queues/acme-only/keys/secret', { concurrency: 1 }));
    expect404(await as('operator').del('/queues/acme-only/keys/secret'));
    // default's own override of the same key name is its own.
    expect((await as('operator').put('/queues/shared/keys/vip', { concurrency: 2 })).body).toMatchObject({ overrides: { concurrency: 2 }, limits: { concurrency: 2 } });
    expect((await as('operator').del('/queues/shared/keys/vip')).body.limits).toEqual({ concurrency: 1, rateLimit: null });
    // acme's is as it was.
    expect((await as('acme-op').get('/queues/shared/keys')).body.items).toEqual([
      { key: 'vip', waiting: 0, active: 0, overrides: { concurrency: 50, rateLimit: null }, limits: { concurrency: 50, rateLimit: null } },
    ]);
    expect((await as('root', 'acme').get('/queues/acme-only/keys')).body.items.map((k: { key: string }) => k.key)).toEqual(['secret']);
    // A job's concurrencyKey is as scoped as its job: another project's id → 404.
    const job = await as('root', 'acme').get('/queues/shared');
    expect(job.body.keyConcurrency).toBe(7);
  });

  it('every override call is in the operator log (action, target queue/key, status), refusals included; the listing is not', async () => {
    const did: { rid: string; action: string; target: string; status: number; method: string }[] = [];
    const rec = (res: { status: number; headers: Record<string, string> }, action: string, target: string, status: number, method: string) => {
      expect(res.status).toBe(status);
      did.push({ rid: res.headers['x-request-id'], action, target, status, method });
    };
    expect((await as('operator').put('/queues/log-q', {})).status).toBe(200);
    rec(await as('operator').put('/queues/log-q/keys/cust-1', { concurrency: 4 }), 'queue.set_key_override', 'log-q/cust-1', 200, 'PUT');
    rec(await as('operator').put(`/queues/log-q/keys/${encodeURIComponent('a/b')}`, { concurrency: 4 }), 'queue.set_key_override', 'log-q/a/b', 200, 'PUT');
    rec(await as('viewer').put('/queues/log-q/keys/cust-1', { concurrency: 9 }), 'queue.set_key_override', 'log-q/cust-1', 403, 'PUT');
    rec(await as('operator').put('/queues/log-q/keys/cust-1', { concurrency: 0 }), 'queue.set_key_override', 'log-q/cust-1', 400, 'PUT');
    rec(await as('operator').put('/queues/nope-q/keys/cust-1', { concurrency: 1 }), 'queue.set_key_override', 'nope-q/cust-1', 404, 'PUT');
    rec(await as('operator').del('/queues/log-q/keys/cust-1'), 'queue.delete_key_override', 'log-q/cust-1', 200, 'DELETE');
    const listing = await as('viewer').get('/queues/log-q/keys');
    expect(listing.status).toBe(200);
    for (const d of did) {
      const row = await waitUntil(`the audit row of ${d.rid}`, async () => ((await api.db.dataSource.query(`SELECT * FROM operator_audit WHERE request_id = $1`, [d.rid])) as any[])[0], 10_000, 50);
      expect({ action: row.action, target: row.target, status: row.status, method: row.method, path: row.path, project: row.project }).toEqual({
        action: d.action,
        target: d.target,
        status: d.status,
        method: d.method,
        path: '/queues/:name/keys/:key',
        project: 'default',
      });
    }
    expect(await api.db.dataSource.query(`SELECT * FROM operator_audit WHERE request_id = $1`, [listing.headers['x-request-id']])).toEqual([]);
  });
});
