import { randomBytes } from 'node:crypto';
import { startTestApi, type TestApi } from '../support/http';
import { sleep } from '../support/redis';

/**
 * In-process workers and projects: a worker with `QUEUES=acme/work` runs
 * acme's `work` queue and nothing of default's queue of the same name; one
 * with `QUEUES=*` runs every project's queues. Handlers are server code,
 * the same for every project. GET /workers shows each project the workers
 * that serve it, with its own queue names.
 */
const ROOT = 'sk_' + randomBytes(32).toString('base64url');
let api: TestApi;
const workers: TestApi[] = [];
const as = (r: any, project?: string) => (project ? r.set('x-sluice-project', project) : r).set('authorization', `Bearer ${ROOT}`);

async function statusOf(id: string, project: string | undefined, want: string, ms = 10_000): Promise<string> {
  const end = Date.now() + ms;
  for (;;) {
    const s = (await as(api.http.get(`/jobs/${id}`), project)).body.status as string;
    if (s === want || Date.now() > end) return s;
    await sleep(100);
  }
}

beforeAll(async () => {
  api = await startTestApi('projw', { AUTH: 'on', SLUICE_BOOTSTRAP_ADMIN_KEY: ROOT, ROLE: 'api,audit' });
  expect((await as(api.http.post('/projects')).send({ name: 'acme' })).status).toBe(201);
});
afterAll(async () => {
  for (const w of workers) await w.close();
  await api?.close();
});

const shared = () => ({ ROLE: 'worker', DATABASE_URL: api.db.url, REDIS_PREFIX: api.prefix, HEARTBEAT_INTERVAL_MS: '200' });

test('QUEUES=acme/work runs acme’s queue only; QUEUES=* runs every project’s', async () => {
  const a = (await as(api.http.post('/jobs'), 'acme').send({ queue: 'work', type: 'diag.echo', payload: { p: 'acme' } })).body;
  const d = (await as(api.http.post('/jobs')).send({ queue: 'work', type: 'diag.echo', payload: { p: 'default' } })).body;
  expect(a.queue).toBe('work');
  expect(d.queue).toBe('work');

  workers.push(await startTestApi('projw-acme', { ...shared(), QUEUES: 'acme/work' }));
  expect(await statusOf(a.id, 'acme', 'completed')).toBe('completed');
  expect((await as(api.http.get(`/jobs/${a.id}`), 'acme')).body.result).toEqual({ p: 'acme' });
  await sleep(500);
  expect(await statusOf(d.id, undefined, 'waiting', 0)).toBe('waiting');

  const seen = async (project?: string) => (await as(api.http.get('/workers'), project)).body.map((w: { queues: string[] }) => w.queues);
  expect(await seen('acme')).toEqual([['work']]);
  expect(await seen()).toEqual([]);

  workers.push(await startTestApi('projw-all', { ...shared(), QUEUES: '*' }));
  expect(await statusOf(d.id, undefined, 'completed')).toBe('completed');
  const b = (await as(api.http.post('/jobs'), 'acme').send({ queue: 'other', type: 'diag.echo', payload: { p: 'acme-other' } })).body;
  expect(await statusOf(b.id, 'acme', 'completed')).toBe('completed');
  expect((await seen('acme')).sort()).toEqual([['*'], ['work']]);
  expect(await seen()).toEqual([['*']]);
}, 60_000);

test('PROJECT_MAX_WAITING counts per project: one project at its cap does not stop another', async () => {
  const capped = await startTestApi('projcap', { AUTH: 'on', SLUICE_BOOTSTRAP_ADMIN_KEY: ROOT, PROJECT_MAX_WAITING: '2' });
  try {
    const post = (project: string | undefined, queue: string) => {
      let r = capped.http.post('/jobs').set('authorization', `Bearer ${ROOT}`);
      if (project) r = r.set('x-sluice-project', project);
      return r.send({ queue, type: 'diag.echo' });
    };
    expect((await capped.http.post('/projects').set('authorization', `Bearer ${ROOT}`).send({ name: 'acme' })).status).toBe(201);
    for (const q of ['a', 'b']) expect((await post('acme', q)).status).toBe(201);
    const refused = await post('acme', 'c');
    expect(refused.status).toBe(429);
    expect(refused.body.error.message).toMatch(/project acme/);
    // After a fresh count (every second) too: acme's two jobs are acme's, not default's.
    await sleep(1200);
    for (const q of ['a', 'b']) expect((await post(undefined, q)).status).toBe(201);
    expect((await post(undefined, 'c')).status).toBe(429);
    expect((await post('acme', 'a')).status).toBe(429);
  } finally {
    await capped.close();
  }
}, 30_000);
