import { randomBytes } from 'node:crypto';
import { startTestApi, type TestApi } from '../support/http';
import { openSse } from '../support/sse';

/**
 * `hidePayloads` (API.md v1.3) on every surface a member reads: the job, the
 * list, the DLQ, events, logs, recent jobs, the live events, the answers of
 * enqueue, batch, flows and retry; payload search refused. Each surface is read
 * by a member who hides payloads (no byte of the secret in the answer, the
 * fields read "[hidden]") and by one who does not (the secret is there: the
 * surface does carry it, so the first check is not empty).
 */
const ROOT = 'sk_' + randomBytes(32).toString('base64url');
const PW = 'a long enough password';
const SECRET = 'sekret-' + randomBytes(6).toString('hex');
const H = '[hidden]';
let api: TestApi;
const tokens: Record<'hidden' | 'plain', string> = { hidden: '', plain: '' };
const ids = { done: '', dead: '' };

const root = (r: any) => r.set('authorization', `Bearer ${ROOT}`).set('x-sluice-project', 'hp-p');
const as = (who: 'hidden' | 'plain') => (r: any) => r.set('cookie', `sluice_session=${tokens[who]}`).set('origin', api.url);

beforeAll(async () => {
  api = await startTestApi('hidepayloads', { AUTH: 'on', SLUICE_BOOTSTRAP_ADMIN_KEY: ROOT, ROLE: 'api,audit' });
  const h = api.http;
  const bare = (r: any) => r.set('authorization', `Bearer ${ROOT}`);
  expect((await bare(h.post('/orgs')).send({ name: 'hp' })).status).toBe(201);
  expect((await bare(h.post('/projects')).send({ name: 'hp-p', org: 'hp' })).status).toBe(201);
  for (const who of ['hidden', 'plain'] as const) {
    const m = await root(h.post('/orgs/hp/members')).send({ username: who, orgRole: 'member', projects: { 'hp-p': 'operator' }, hidePayloads: who === 'hidden' });
    expect(m.status).toBe(201);
    expect(m.body.hidePayloads).toBe(who === 'hidden');
    expect((await h.post('/auth/accept-invite').send({ token: m.body.inviteToken, password: PW })).status).toBe(200);
    const l = await h.post('/auth/login').send({ username: who, password: PW });
    tokens[who] = /sluice_session=([^;]+)/.exec(String(l.headers['set-cookie']))![1];
  }
  // A job that completed with a result and wrote log lines, and one in the DLQ, all carrying the secret.
  expect((await root(h.put('/queues/ext')).send({ external: true })).status).toBe(200);
  ids.done = (await root(h.post('/jobs')).send({ queue: 'ext', type: 'ext.t', payload: { card: SECRET } })).body.id;
  let c = await root(h.post('/queues/ext/claim')).send({ workerId: 'w1' });
  expect((await root(h.post(`/jobs/${ids.done}/heartbeat`)).send({ lockToken: c.body.jobs[0].lockToken, logs: [`charging ${SECRET}`] })).status).toBe(200);
  expect((await root(h.post(`/jobs/${ids.done}/complete`)).send({ lockToken: c.body.jobs[0].lockToken, result: { receipt: SECRET } })).status).toBe(200);
  ids.dead = (await root(h.post('/jobs')).send({ queue: 'ext', type: 'ext.t', payload: { card: SECRET } })).body.id;
  c = await root(h.post('/queues/ext/claim')).send({ workerId: 'w1' });
  expect((await root(h.post(`/jobs/${ids.dead}/fail`)).send({ lockToken: c.body.jobs[0].lockToken, error: { message: 'declined' }, retryable: false })).status).toBe(200);
  // Mirrored (the lists wait for the mirror).
  expect((await root(h.get('/jobs?queue=ext'))).body.items).toHaveLength(2);
}, 60_000);
afterAll(() => api?.close());

/** Reads a surface as both members: the hidden one never sees the secret, the plain one does. */
async function both(read: (who: 'hidden' | 'plain') => Promise<any>, check: (hidden: any) => void): Promise<void> {
  const plain = await read('plain');
  expect(JSON.stringify(plain)).toContain(SECRET);
  const hidden = await read('hidden');
  expect(JSON.stringify(hidden)).not.toContain(SECRET);
  check(hidden);
}

test('GET /jobs/:id: payload and result', async () => {
  await both(
    async (w) => (await as(w)(api.http.get(`/jobs/${ids.done}`))).body,
    (j) => expect(j).toMatchObject({ id: ids.done, status: 'completed', payload: H, result: H }),
  );
});

test('GET /jobs (list)', async () => {
  await both(
    async (w) => (await as(w)(api.http.get('/jobs?queue=ext'))).body,
    (b) => expect(b.items.map((j: any) => [j.payload, j.status])).toEqual(expect.arrayContaining([[H, 'completed'], [H, 'failed']])),
  );
});

test('GET /jobs/dlq/all', async () => {
  await both(
    async (w) => (await as(w)(api.http.get('/jobs/dlq/all'))).body,
    (b) => expect(b.items.map((j: any) => [j.id, j.payload, j.lastError])).toEqual([[ids.dead, H, 'declined']]),
  );
});

test('GET /jobs/:id/events: the enqueued payload and the completed result', async () => {
  await both(
    async (w) => (await as(w)(api.http.get(`/jobs/${ids.done}/events`))).body,
    (b) => {
      const byEvent = Object.fromEntries(b.items.map((e: any) => [e.event, e.data]));
      expect(byEvent.enqueued).toBe(H);
      expect(byEvent.completed).toBe(H);
    },
  );
});

test('GET /jobs/:id/logs: the messages', async () => {
  await both(
    async (w) => (await as(w)(api.http.get(`/jobs/${ids.done}/logs`))).body,
    (b) => expect(b.items.map((l: any) => l.message)).toEqual([H]),
  );
});

test('GET /dashboard/recent', async () => {
  await both(
    async (w) => (await as(w)(api.http.get('/dashboard/recent'))).body,
    (b) => {
      expect(b.length).toBeGreaterThanOrEqual(2);
      expect(new Set(b.map((j: any) => j.payload))).toEqual(new Set([H]));
    },
  );
});

test('live events (?job=): the job, its events and its log lines', async () => {
  await both(
    async (w) => {
      const s = await openSse(`${api.url}/dashboard/events?job=${ids.done}`, { cookie: `sluice_session=${tokens[w]}` });
      try {
        expect(s.status).toBe(200);
        await s.waitFor((e) => e.event === 'log');
        await s.waitFor((e) => e.event === 'event' && (e.data as { event: string }).event === 'completed');
        return s.events;
      } finally {
        s.close();
      }
    },
    (events) => {
      expect(events.find((e: any) => e.event === 'job').data).toMatchObject({ payload: H, result: H });
      expect(events.find((e: any) => e.event === 'log').data.message).toBe(H);
      expect(events.filter((e: any) => e.event === 'event' && e.data.event === 'enqueued').map((e: any) => e.data.data)).toEqual([H]);
    },
  );
});

test('answers of enqueue, batch, flows and DLQ retry', async () => {
  await both(
    async (w) => (await as(w)(api.http.post('/jobs')).send({ queue: 'ext', type: 'ext.t', payload: { card: SECRET } })).body,
    (j) => expect(j.payload).toBe(H),
  );
  await both(
    async (w) => (await as(w)(api.http.post('/jobs/batch')).send({ jobs: [{ queue: 'ext', type: 'ext.t', payload: { card: SECRET } }] })).body,
    (b) => expect(b.jobs[0].payload).toBe(H),
  );
  await both(
    async (w) => (await as(w)(api.http.post('/flows')).send({ jobs: [{ ref: 'a', queue: 'ext', type: 'ext.t', payload: { card: SECRET } }] })).body,
    (b) => expect(JSON.stringify(b)).toContain(H),
  );
  // The plain member retries first (the job is then waiting), so fail it again for the hidden one.
  const plain = await as('plain')(api.http.post(`/jobs/${ids.dead}/retry`)).send({});
  expect(JSON.stringify(plain.body)).toContain(SECRET);
  const c = await root(api.http.post('/queues/ext/claim')).send({ workerId: 'w2', max: 100 });
  const mine = c.body.jobs.find((j: { id: string }) => j.id === ids.dead);
  expect((await root(api.http.post(`/jobs/${ids.dead}/fail`)).send({ lockToken: mine.lockToken, error: { message: 'declined' }, retryable: false })).status).toBe(200);
  const hidden = await as('hidden')(api.http.post(`/jobs/${ids.dead}/retry`)).send({});
  expect([hidden.status, hidden.body.payload]).toEqual([200, H]);
  expect(JSON.stringify(hidden.body)).not.toContain(SECRET);
});

test('a large batch answer (streamed in slices) is hidden too', async () => {
  const pad = 'x'.repeat(4000);
  const jobs = Array.from({ length: 300 }, (_, i) => ({ queue: 'ext', type: 'ext.t', payload: { card: SECRET, i, pad } }));
  await both(
    async (w) => {
      const r = await as(w)(api.http.post('/jobs/batch')).send({ jobs });
      expect(r.status).toBe(201);
      return r.body;
    },
    (b) => {
      expect(b.jobs).toHaveLength(300);
      expect(new Set(b.jobs.map((j: any) => j.payload))).toEqual(new Set([H]));
    },
  );
});

test('GET /schedules and /schedules/:id: the payload jobs will be enqueued with', async () => {
  const sc = await root(api.http.post('/schedules')).send({ name: 'nightly', cron: '0 3 * * *', queue: 'ext', type: 'ext.t', payload: { card: SECRET } });
  expect(sc.status).toBe(201);
  await both(
    async (w) => (await as(w)(api.http.get('/schedules'))).body,
    (b) => expect(b.map((x: any) => x.payload)).toEqual([H]),
  );
  await both(
    async (w) => (await as(w)(api.http.get(`/schedules/${sc.body.id}`))).body,
    (x) => expect(x.payload).toBe(H),
  );
});

test('searching by payload is refused to the member who hides payloads (it would tell the values)', async () => {
  const from = new Date(Date.now() - 3600e3).toISOString();
  const q = `/jobs?queue=ext&from=${from}&payload=${encodeURIComponent(JSON.stringify({ card: SECRET }))}`;
  expect((await as('plain')(api.http.get(q))).status).not.toBe(403);
  const r = await as('hidden')(api.http.get(q));
  expect([r.status, r.body.error.code]).toEqual([403, 'forbidden']);
  // Nor a claim (an operator may not claim anyway; the rule holds for an admin member too).
  const c = await as('hidden')(api.http.post('/queues/ext/claim')).send({ workerId: 'x' });
  expect(c.status).toBe(403);
});

test('GET /auth/session says so; a PATCH of hidePayloads ends the sessions and applies at the next login', async () => {
  expect((await as('hidden')(api.http.get('/auth/session'))).body.hidePayloads).toBe(true);
  expect((await root(api.http.patch('/orgs/hp/members/hidden')).send({ hidePayloads: false })).body.hidePayloads).toBe(false);
  expect((await as('hidden')(api.http.get(`/jobs/${ids.done}`))).status).toBe(401);
  const l = await api.http.post('/auth/login').send({ username: 'hidden', password: PW });
  tokens.hidden = /sluice_session=([^;]+)/.exec(String(l.headers['set-cookie']))![1];
  expect((await as('hidden')(api.http.get(`/jobs/${ids.done}`))).body.payload).toEqual({ card: SECRET });
});
