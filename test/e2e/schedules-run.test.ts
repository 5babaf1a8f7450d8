import { randomBytes } from 'node:crypto';
import { startTestApi, type TestApi } from '../support/http';
import { waitUntil } from '../support/timing';

/**
 * `POST /schedules/:id/run` (a manual run): enqueues the schedule's job now
 * with no idempotency key, leaves nextRunAt and lastSlotAt alone, works on a
 * disabled schedule, stays within the caller's project (another project's id
 * → 404), needs operator (viewer → 403) and is in the operator audit log.
 */
const ROOT = 'sk_' + randomBytes(32).toString('base64url');
let api: TestApi;
const key: Record<'operator' | 'viewer' | 'other', string> = { operator: '', viewer: '', other: '' };

const as = (who: keyof typeof key) => ({
  get: (url: string) => api.http.get(url).set('authorization', `Bearer ${key[who]}`),
  post: (url: string, body: object = {}) => api.http.post(url).set('authorization', `Bearer ${key[who]}`).send(body),
  patch: (url: string, body: object) => api.http.patch(url).set('authorization', `Bearer ${key[who]}`).send(body),
});
const root = (project?: string) => {
  const r = (req: any) => (project ? req.set('x-sluice-project', project) : req).set('authorization', `Bearer ${ROOT}`);
  return { post: (url: string, body: object = {}) => r(api.http.post(url)).send(body) };
};

beforeAll(async () => {
  api = await startTestApi('schedules-run', { AUTH: 'on', SLUICE_BOOTSTRAP_ADMIN_KEY: ROOT, ROLE: 'all' });
  expect((await root().post('/projects', { name: 'other' })).status).toBe(201);
  for (const [who, role, project] of [['operator', 'operator', 'default'], ['viewer', 'viewer', 'default'], ['other', 'operator', 'other']] as const) {
    const r = await root(project).post('/keys', { name: `run-${who}`, role });
    expect(r.status).toBe(201);
    key[who] = r.body.secret;
  }
}, 60_000);
afterAll(() => api?.close());

test('run now enqueues the schedule job (201), which completes; nextRunAt and lastSlotAt do not move; audited', async () => {
  const s = await as('operator').post('/schedules', {
    name: 'nightly-echo',
    cron: '0 3 * * *',
    queue: 'run-q',
    type: 'diag.echo',
    payload: { n: 7 },
    priority: 5,
    maxAttempts: 4,
    timeoutMs: 30_000,
  });
  expect(s.status).toBe(201);
  const before = s.body;

  const r = await as('operator').post(`/schedules/${before.id}/run`);
  expect(r.status).toBe(201);
  expect(r.body).toMatchObject({ queue: 'run-q', type: 'diag.echo', payload: { n: 7 }, priority: 5, maxAttempts: 4, timeoutMs: 30_000, idempotencyKey: null });
  const jobId: string = r.body.id;

  const done = await waitUntil('the manual run job completes', async () => {
    const j = await as('operator').get(`/jobs/${jobId}`);
    return j.body.status === 'completed' ? j.body : undefined;
  }, 15_000, 100);
  expect(done.result).toEqual({ n: 7 });

  // A second run makes a second job (no idempotency key to replay).
  const again = await as('operator').post(`/schedules/${before.id}/run`);
  expect(again.status).toBe(201);
  expect(again.body.id).not.toBe(jobId);

  const after = (await as('operator').get(`/schedules/${before.id}`)).body;
  expect(after.nextRunAt).toBe(before.nextRunAt);
  expect(after.lastSlotAt).toBe(before.lastSlotAt);
  expect(after.lastRunAt).toBe(before.lastRunAt);

  const rows: { action: string; target: string; status: number; path: string }[] = await waitUntil(
    'the schedule.run audit rows',
    async () => {
      const got = await api.db.dataSource.query(`SELECT action, target, status, path FROM operator_audit WHERE action = 'schedule.run' AND target = $1`, [before.id]);
      return got.length >= 2 ? got : undefined;
    },
    10_000,
    50,
  );
  expect(rows[0]).toMatchObject({ action: 'schedule.run', target: before.id, status: 201, path: '/schedules/:id/run' });
});

test('a disabled schedule runs too (and stays disabled, nextRunAt null)', async () => {
  const s = await as('operator').post('/schedules', { name: 'off', cron: '*/5 * * * *', queue: 'run-q', type: 'diag.echo', enabled: false });
  expect(s.status).toBe(201);
  const r = await as('operator').post(`/schedules/${s.body.id}/run`);
  expect(r.status).toBe(201);
  expect(r.body.type).toBe('diag.echo');
  const after = (await as('operator').get(`/schedules/${s.body.id}`)).body;
  expect(after).toMatchObject({ enabled: false, nextRunAt: null });
});

test("another project's schedule → 404; an unknown or malformed id → 404; a viewer → 403", async () => {
  const s = await as('operator').post('/schedules', { name: 'mine', cron: '0 4 * * *', queue: 'run-q', type: 'diag.echo' });
  expect(s.status).toBe(201);
  const foreign = await as('other').post(`/schedules/${s.body.id}/run`);
  expect(foreign.status).toBe(404);
  expect(foreign.body.error.code).toBe('not_found');
  expect((await as('operator').post('/schedules/0190a3b4-0000-7000-8000-000000000000/run')).status).toBe(404);
  expect((await as('operator').post('/schedules/nope/run')).status).toBe(404);
  const viewer = await as('viewer').post(`/schedules/${s.body.id}/run`);
  expect(viewer.status).toBe(403);
});
