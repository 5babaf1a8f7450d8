import { randomBytes } from 'node:crypto';
import { WorkerRegistry } from '../../src/workers/registry/worker-registry';
import { WorkerRegistryStore } from '../../src/core/ports';
import { payloadIndexName } from '../../src/queues/payload-search';
import { sleep } from '../support/redis';
import { openSse, type SseStream } from '../support/sse';
import { startTestApi, type TestApi } from '../support/http';

/**
 * Projects (tenants), two side by side through every endpoint: the same
 * queue name (`shared`) in `acme` and in `default`, jobs waiting and
 * dead-lettered in both, a schedule of the same name in both. Each project's
 * key sees, counts and changes only its own; another project's ids and names
 * answer 404 (never 403). A third project `acme-x` (whose names start like
 * acme's) holds a job too, so a prefix that bled into `acme` would show.
 */
const ROOT = 'sk_' + randomBytes(32).toString('base64url');
const PROJECTS = ['acme', 'default'] as const;
type P = (typeof PROJECTS)[number];
const other = (p: P): P => (p === 'acme' ? 'default' : 'acme');

let api: TestApi;
const key = {} as Record<P | 'acme-x', string>;
const keyId = {} as Record<P, string>;
const waitingIds = {} as Record<P, string[]>;
const dlqIds = {} as Record<P, string>;
const scheduleId = {} as Record<P, string>;

function as(p: P | 'acme-x') {
  const auth = (r: any) => r.set('authorization', `Bearer ${key[p]}`);
  return {
    get: (url: string) => auth(api.http.get(url)),
    post: (url: string, body: unknown = {}) => auth(api.http.post(url)).send(body as object),
    put: (url: string, body: unknown = {}) => auth(api.http.put(url)).send(body as object),
    patch: (url: string, body: unknown = {}) => auth(api.http.patch(url)).send(body as object),
    del: (url: string) => auth(api.http.delete(url)),
  };
}
const root = (project?: string) => {
  const auth = (r: any) => (project ? r.set('x-sluice-project', project) : r).set('authorization', `Bearer ${ROOT}`);
  return { get: (url: string) => auth(api.http.get(url)), post: (url: string, body: unknown = {}) => auth(api.http.post(url)).send(body as object) };
};

/** Polls `fn` until it returns a value (not undefined), up to `ms`. */
async function eventually<T>(fn: () => Promise<T | undefined>, ms = 10_000): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const v = await fn();
    if (v !== undefined) return v;
    if (Date.now() > end) throw new Error('condition not met in time');
    await sleep(100);
  }
}

beforeAll(async () => {
  api = await startTestApi('projects', { AUTH: 'on', SLUICE_BOOTSTRAP_ADMIN_KEY: ROOT, ROLE: 'api,audit,scheduler' });
  for (const name of ['acme', 'acme-x']) expect((await root().post('/projects', { name })).status).toBe(201);
  for (const p of [...PROJECTS, 'acme-x'] as const) {
    const r = await root(p).post('/keys', { name: `${p}-admin`, role: 'admin' });
    expect(r.status).toBe(201);
    expect(r.body.project).toBe(p);
    key[p] = r.body.secret;
    if (p !== 'acme-x') keyId[p] = r.body.id;
  }
  for (const p of [...PROJECTS, 'acme-x'] as const) {
    expect((await as(p).put('/queues/shared', { external: true })).status).toBe(200);
  }
  expect((await as('acme-x').post('/jobs', { queue: 'shared', type: 'ext.task', payload: { p: 'acme-x' } })).status).toBe(201);
  for (const p of PROJECTS) {
    const ids: string[] = [];
    for (let i = 0; i < 4; i++) {
      const r = await as(p).post('/jobs', { queue: 'shared', type: 'ext.task', payload: { p, i } });
      expect(r.status).toBe(201);
      expect(r.body.queue).toBe('shared');
      ids.push(r.body.id);
    }
    // One of them dead-lettered through the external worker protocol.
    const c = await as(p).post('/queues/shared/claim', { workerId: `w-${p}`, max: 1 });
    expect(c.status).toBe(200);
    expect(c.body.jobs).toHaveLength(1);
    expect(c.body.jobs[0].payload.p).toBe(p);
    const f = await as(p).post(`/jobs/${c.body.jobs[0].id}/fail`, { lockToken: c.body.jobs[0].lockToken, error: { message: `boom ${p}` }, retryable: false });
    expect(f.status).toBe(200);
    expect(f.body.status).toBe('failed');
    dlqIds[p] = c.body.jobs[0].id;
    waitingIds[p] = ids.filter((id) => id !== dlqIds[p]);
    const s = await as(p).post('/schedules', { name: 'nightly', cron: '0 3 * * *', queue: 'shared', type: 'ext.task' });
    expect(s.status).toBe(201);
    expect(s.body.queue).toBe('shared');
    scheduleId[p] = s.body.id;
  }
  expect((await as('acme').put('/queues/only-acme', { external: true })).status).toBe(200);
}, 60_000);
afterAll(() => api?.close());

describe('the projects registry', () => {
  test('root keys create and list projects; default always exists', async () => {
    const list = await root().get('/projects');
    expect(list.status).toBe(200);
    expect(list.body.map((p: { name: string }) => p.name)).toEqual(['default', 'acme', 'acme-x']);
    expect((await root().post('/projects', { name: 'acme' })).status).toBe(409);
    expect((await root().post('/projects', { name: 'default' })).status).toBe(409);
    for (const name of ['Acme', 'a/b', '', '-x', 'x'.repeat(65)]) {
      const r = await root().post('/projects', { name });
      expect(r.status).toBe(400);
      expect(r.body.error.code).toBe('validation_failed');
    }
  });

  test('a project key may not manage projects (403); a root key naming an unknown project → 404', async () => {
    expect((await as('acme').get('/projects')).status).toBe(403);
    expect((await as('acme').post('/projects', { name: 'zzz' })).status).toBe(403);
    const r = await root('nope').get('/queues');
    expect(r.status).toBe(404);
    expect(r.body.error.code).toBe('not_found');
    expect((await root('Not A Name').get('/queues')).status).toBe(404);
  });

  test('a non-root key acts in its own project whatever X-Sluice-Project says', async () => {
    const r = await as('acme').get('/queues').set('x-sluice-project', 'default');
    expect(r.status).toBe(200);
    expect(r.body.map((q: { name: string }) => q.name).sort()).toEqual(['only-acme', 'shared']);
  });
});

describe('two projects side by side', () => {
  test.each(PROJECTS)('%s: job lists hold only its own jobs, under the bare queue name', async (p) => {
    const own = new Set([...waitingIds[p], dlqIds[p]]);
    for (const url of ['/jobs', '/jobs?queue=shared', '/jobs?status=waiting', '/jobs?type=ext.task', '/jobs?status=waiting&type=ext.task', '/jobs?limit=1']) {
      const items: { id: string; queue: string; payload: { p: string } }[] = [];
      let cursor: string | null = null;
      do {
        const r = await as(p).get(`${url}${url.includes('?') ? '&' : '?'}${cursor ? `cursor=${cursor}` : ''}`);
        expect(r.status).toBe(200);
        items.push(...r.body.items);
        cursor = r.body.nextCursor;
      } while (cursor);
      expect(items.length).toBeGreaterThan(0);
      for (const j of items) {
        expect(own.has(j.id)).toBe(true);
        expect(j.queue).toBe('shared');
        expect(j.payload.p).toBe(p);
      }
    }
    const all = await as(p).get('/jobs?limit=500');
    expect(new Set(all.body.items.map((j: { id: string }) => j.id))).toEqual(own);
    expect((await as(p).get('/jobs?queue=only-acme')).body.items).toEqual([]);
  });

  test.each(PROJECTS)('%s: queues, counts, stats, recent jobs and the DLQ are its own', async (p) => {
    const queues = await as(p).get('/queues');
    expect(queues.body.map((q: { name: string }) => q.name).sort()).toEqual(p === 'acme' ? ['only-acme', 'shared'] : ['shared']);
    const shared = await as(p).get('/queues/shared');
    expect(shared.body.counts).toMatchObject({ waiting: 3, failed: 1, active: 0 });
    const stats = await as(p).get('/dashboard/stats');
    expect(stats.status).toBe(200);
    expect(Object.keys(stats.body.queues).sort()).toEqual(p === 'acme' ? ['only-acme', 'shared'] : ['shared']);
    expect(stats.body.totals).toMatchObject({ waiting: 3, failed: 1 });
    const recent = await as(p).get('/dashboard/recent');
    expect(recent.body.length).toBe(4);
    for (const j of recent.body) expect(j.payload.p).toBe(p);
    const dlq = await as(p).get('/jobs/dlq/all');
    expect(dlq.body.items.map((j: { id: string }) => j.id)).toEqual([dlqIds[p]]);
    expect(dlq.body.items[0].queue).toBe('shared');
    expect((await as(p).get('/jobs/dlq/all?queue=shared')).body.items.map((j: { id: string }) => j.id)).toEqual([dlqIds[p]]);
  });

  test.each(PROJECTS)('%s: schedules and keys are its own; a schedule name is unique per project only', async (p) => {
    const s = await as(p).get('/schedules');
    expect(s.body.map((x: { id: string }) => x.id)).toEqual([scheduleId[p]]);
    expect((await as(p).post('/schedules', { name: 'nightly', cron: '0 4 * * *', queue: 'shared', type: 'ext.task' })).status).toBe(409);
    const keys = await as(p).get('/keys');
    expect(keys.body.every((k: { project: string }) => k.project === p)).toBe(true);
    expect(keys.body.map((k: { id: string }) => k.id)).toContain(keyId[p]);
  });

  test.each(PROJECTS)("%s: another project's job ids, queue names, schedule ids and key ids → 404", async (p) => {
    const o = other(p);
    const foreign = [...waitingIds[o], dlqIds[o]];
    for (const id of foreign) {
      const calls = [
        as(p).get(`/jobs/${id}`),
        as(p).get(`/jobs/${id}/events`),
        as(p).get(`/jobs/${id}/executions`),
        as(p).get(`/jobs/${id}/logs`),
        as(p).del(`/jobs/${id}`),
        as(p).post(`/jobs/${id}/retry`),
        as(p).post(`/jobs/${id}/heartbeat`, { lockToken: 'x' }),
        as(p).post(`/jobs/${id}/complete`, { lockToken: 'x' }),
        as(p).post(`/jobs/${id}/fail`, { lockToken: 'x', error: { message: 'x' } }),
        as(p).post(`/jobs/${id}/release`, { lockToken: 'x' }),
      ];
      for (const r of await Promise.all(calls)) {
        expect(r.status).toBe(404);
        expect(r.body.error.code).toBe('not_found');
      }
    }
    for (const r of await Promise.all([
      as(p).get(`/schedules/${scheduleId[o]}`),
      as(p).patch(`/schedules/${scheduleId[o]}`, { enabled: false }),
      as(p).del(`/schedules/${scheduleId[o]}`),
      as(p).del(`/keys/${keyId[o]}`),
    ])) {
      expect(r.status).toBe(404);
    }
    if (p === 'default') {
      expect((await as(p).get('/queues/only-acme')).status).toBe(404);
      expect((await as(p).post('/queues/only-acme/resume')).status).toBe(404);
    }
    // Nothing of the other project changed.
    expect((await as(o).get(`/schedules/${scheduleId[o]}`)).body.enabled).toBe(true);
    expect((await as(o).get('/keys')).body.map((k: { id: string }) => k.id)).toContain(keyId[o]);
    expect((await as(o).get('/queues/shared')).body.counts).toMatchObject({ waiting: 3, failed: 1, active: 0, cancelled: 0 });
  });

  test('a queue name acts in the caller’s project: PUT, pause and claim never touch the other’s queue', async () => {
    expect((await as('default').post('/queues/only-acme/pause')).status).toBe(200);
    expect((await as('acme').get('/queues/only-acme')).body.paused).toBe(false);
    const claim = await as('default').post('/queues/only-acme/claim', { workerId: 'w', max: 10 });
    expect(claim.body.jobs).toEqual([]);
  });

  test('the same idempotency key in two projects makes two jobs', async () => {
    const body = { queue: 'shared', type: 'ext.task', payload: { same: true }, idempotencyKey: 'idem-1' };
    const a = await as('acme').post('/jobs', body);
    const d = await as('default').post('/jobs', body);
    expect(a.status).toBe(201);
    expect(d.status).toBe(201);
    expect(a.body.id).not.toBe(d.body.id);
    for (const [p, r] of [['acme', a], ['default', d]] as const) expect((await as(p).del(`/jobs/${r.body.id}`)).status).toBe(200);
  });

  test('external claims of one project never return another project’s jobs', async () => {
    const r = await as('acme').post('/queues/shared/claim', { workerId: 'w-acme-2', max: 100, leaseMs: 60_000 });
    expect(r.body.jobs.map((j: { id: string }) => j.id).sort()).toEqual([...waitingIds.acme].sort());
    for (const j of r.body.jobs) expect(j.queue).toBe('shared');
    // Completing them is acme's business; default's are all still waiting.
    for (const j of r.body.jobs) expect((await as('acme').post(`/jobs/${j.id}/complete`, { lockToken: j.lockToken, result: 1 })).status).toBe(200);
    expect((await as('default').get('/queues/shared')).body.counts).toMatchObject({ waiting: 3, active: 0, completed: 0 });
    const d = await as('default').get(`/jobs/${waitingIds.default[0]}`);
    expect(d.body.status).toBe('waiting');
  });

  test('dashboard throughput counts only the project’s finishes', async () => {
    expect((await as('acme').get('/dashboard/stats')).body.throughput.completedPerMin).toBe(3);
    expect((await as('default').get('/dashboard/stats')).body.throughput.completedPerMin).toBe(0);
  });

  test('DLQ retry-all and purge in one project leave the other’s DLQ untouched', async () => {
    const retried = await as('acme').post('/jobs/dlq/retry', {});
    expect(retried.body).toEqual({ retried: 1 });
    expect((await as('acme').get(`/jobs/${dlqIds.acme}`)).body.status).toBe('waiting');
    expect((await as('default').get('/jobs/dlq/all')).body.items.map((j: { id: string }) => j.id)).toEqual([dlqIds.default]);
    // Dead-letter acme's again, then purge acme's whole DLQ (no queue named).
    const c = await as('acme').post('/queues/shared/claim', { workerId: 'w-acme-3', max: 1 });
    expect(c.body.jobs[0].id).toBe(dlqIds.acme);
    await as('acme').post(`/jobs/${dlqIds.acme}/fail`, { lockToken: c.body.jobs[0].lockToken, error: { message: 'again' }, retryable: false });
    expect((await as('acme').del('/jobs/dlq')).body).toEqual({ purged: 1 });
    expect((await as('default').get('/jobs/dlq/all')).body.items.map((j: { id: string }) => j.id)).toEqual([dlqIds.default]);
    expect((await as('default').get(`/jobs/${dlqIds.default}`)).body.status).toBe('failed');
    expect((await as('default').del('/jobs/dlq?queue=only-acme')).body).toEqual({ purged: 0 });
    expect((await as('default').get('/queues/shared')).body.counts.failed).toBe(1);
  });

  test('workers: each project sees the workers that serve it, with its own queue names', async () => {
    const registry = api.app.get(WorkerRegistryStore);
    const regs = [
      new WorkerRegistry(registry, { id: 'wk-acme', queues: ['acme/shared'], concurrency: 1 }, 30_000),
      new WorkerRegistry(registry, { id: 'wk-default', queues: ['shared'], concurrency: 1 }, 30_000),
      new WorkerRegistry(registry, { id: 'wk-all', queues: ['*'], concurrency: 1 }, 30_000),
      new WorkerRegistry(registry, { id: 'wk-both', queues: ['shared', 'acme/only-acme'], concurrency: 1 }, 30_000),
    ];
    for (const w of regs) await w.beat(0);
    type W = { id: string; queues: string[]; kind: string };
    const seen = async (p: P, kind: string) =>
      Object.fromEntries(((await as(p).get('/workers')).body as W[]).filter((w) => w.kind === kind).map((w) => [w.id, w.queues]));
    expect(await seen('acme', 'process')).toEqual({ 'wk-acme': ['shared'], 'wk-all': ['*'], 'wk-both': ['only-acme'] });
    expect(await seen('default', 'process')).toEqual({ 'wk-default': ['shared'], 'wk-all': ['*'], 'wk-both': ['shared'] });
    // External workers belong to the project whose queues they claimed from (written to Redis once a second).
    const acmeExternal = { 'w-acme': ['shared'], 'w-acme-2': ['shared'], 'w-acme-3': ['shared'] };
    await eventually(async () => (Object.keys(await seen('acme', 'external')).length === 3 ? true : undefined));
    expect(await seen('acme', 'external')).toEqual(acmeExternal);
    expect(await seen('default', 'external')).toEqual({ 'w-default': ['shared'], w: ['only-acme'] });
    expect((await as('acme').get('/dashboard/stats')).body.workers).toEqual({ active: 6, total: 6 });
    for (const w of regs) await w.remove();
  });

  test('/metrics labels every queue series with its project and the bare queue name', async () => {
    // Installation-wide, so root's (API.md v1.2): a project's key gets 403, no credentials 401.
    expect((await api.http.get('/metrics')).status).toBe(401);
    const text = (await api.http.get('/metrics').set('authorization', `Bearer ${ROOT}`)).text;
    for (const p of [...PROJECTS, 'acme-x'] as const) {
      const counts = (await as(p).get('/queues/shared')).body.counts;
      for (const state of ['waiting', 'active', 'failed'] as const) {
        expect(text).toContain(`sluice_queue_jobs{project="${p}",queue="shared",state="${state}"} ${counts[state]}\n`);
      }
    }
    expect(text).toContain('sluice_queue_jobs{project="default",queue="shared",state="waiting"} 3\n');
    expect(text).toContain('sluice_queue_jobs{project="acme-x",queue="shared",state="waiting"} 1\n');
    expect(text).not.toMatch(/queue="[^"]*\//);
  });

  test('a schedule of one project enqueues into that project’s queue', async () => {
    expect((await as('acme').put('/queues/ticks', { external: true })).status).toBe(200);
    const s = await as('acme').post('/schedules', { name: 'every-second', cron: '* * * * * *', queue: 'ticks', type: 'ext.tick' });
    expect(s.status).toBe(201);
    const job = await eventually(async () => (await as('acme').get('/jobs?queue=ticks')).body.items[0]);
    expect(job.queue).toBe('ticks');
    expect(job.idempotencyKey).toMatch(new RegExp(`^schedule:${s.body.id}:`));
    expect((await as('acme').del(`/schedules/${s.body.id}`)).status).toBe(200);
    expect((await as('default').get('/jobs?queue=ticks')).body.items).toEqual([]);
    expect((await as('default').get('/queues')).body.map((q: { name: string }) => q.name)).toEqual(['only-acme', 'shared']);
  });
});

describe('console features per project', () => {
  /** Dead-letters one job of `queue` in `p` with `message` (external worker protocol). @returns its id. */
  async function deadLetter(p: P, queue: string, message: string): Promise<string> {
    expect((await as(p).put(`/queues/${queue}`, { external: true })).status).toBe(200);
    expect((await as(p).post('/jobs', { queue, type: 'ext.grp', payload: { p } })).status).toBe(201);
    const c = await as(p).post(`/queues/${queue}/claim`, { workerId: `g-${p}`, max: 1 });
    expect(c.body.jobs).toHaveLength(1);
    expect((await as(p).post(`/jobs/${c.body.jobs[0].id}/fail`, { lockToken: c.body.jobs[0].lockToken, error: { message }, retryable: false })).status).toBe(200);
    return c.body.jobs[0].id;
  }

  test('DLQ groups, the group listing and retry by fingerprint hold only the project’s dead-letter jobs', async () => {
    // The same cause in both projects: one fingerprint, one group in each, never merged.
    const ids = { acme: await deadLetter('acme', 'grp', 'order 7 not found'), default: await deadLetter('default', 'grp', 'order 8 not found') };
    type G = { fingerprint: string; count: number; queues: string[]; types: string[]; sample: string };
    const groups = async (p: P, q = '') => (await as(p).get(`/jobs/dlq/groups${q}`)).body.items as G[];
    const acme = await groups('acme');
    const fp = (await as('acme').get(`/jobs/${ids.acme}`)).body.fingerprint as string;
    expect((await as('default').get(`/jobs/${ids.default}`)).body.fingerprint).toBe(fp);
    expect(acme).toEqual([expect.objectContaining({ fingerprint: fp, count: 1, queues: ['grp'], types: ['ext.grp'], sample: 'order 7 not found' })]);
    const dflt = await groups('default');
    expect(dflt.find((g) => g.fingerprint === fp)).toMatchObject({ count: 1, queues: ['grp'], sample: 'order 8 not found' });
    // default's earlier failure (boom default) is a group of default's only.
    expect(dflt.map((g) => g.fingerprint).sort()).toEqual([fp, (await as('default').get(`/jobs/${dlqIds.default}`)).body.fingerprint].sort());
    expect(await groups('acme', '?queue=grp')).toEqual(acme);
    expect((await as('acme').get(`/jobs/dlq/all?fingerprint=${fp}`)).body.items.map((j: { id: string }) => j.id)).toEqual([ids.acme]);
    expect((await as('acme').post('/jobs/dlq/retry', { fingerprint: fp })).body).toEqual({ retried: 1 });
    expect((await as('default').get(`/jobs/${ids.default}`)).body.status).toBe('failed');
    expect((await as('default').get(`/jobs/dlq/all?fingerprint=${fp}`)).body.items.map((j: { id: string }) => j.id)).toEqual([ids.default]);
  });

  test('payload search: the index of one project’s queue is built on its qualified name; searches find only the project’s jobs', async () => {
    const r = await as('acme').put('/queues/shared', { payloadSearch: true });
    expect(r.status).toBe(200);
    await eventually(async () => ((await as('acme').get('/queues/shared')).body.payloadSearch === 'ready' ? true : undefined), 20_000);
    expect((await as('default').get('/queues/shared')).body.payloadSearch).toBe(false);
    const [idx] = await api.db.dataSource.query(`SELECT indexdef FROM pg_indexes WHERE indexname = $1`, [payloadIndexName('acme/shared')]);
    expect(idx.indexdef).toMatch(/WHERE \(queue = 'acme\/shared'::text\)/);
    expect(await api.db.dataSource.query(`SELECT 1 FROM pg_indexes WHERE indexname = $1`, [payloadIndexName('shared')])).toEqual([]);
    // Jobs of both projects carry {"i": 0}; each project's search (with and without queue) finds its own only.
    const from = new Date(Date.now() - 3_600_000).toISOString();
    for (const p of PROJECTS) {
      for (const q of ['', '&queue=shared']) {
        const res = await as(p).get(`/jobs?from=${from}&payload=${encodeURIComponent('{"i":0}')}${q}`);
        expect(res.status).toBe(200);
        expect(res.body.items.length).toBeGreaterThan(0);
        for (const j of res.body.items) expect([j.queue, j.payload.p]).toEqual(['shared', p]);
      }
    }
    expect((await as('acme').put('/queues/shared', { payloadSearch: false })).body.payloadSearch).toBe(false);
  });

  test('dashboard metrics count only the project’s finishes', async () => {
    const completed = async (p: P, q = '') => {
      const r = await as(p).get(`/dashboard/metrics${q}`);
      expect(r.status).toBe(200);
      return (r.body.series as { completed: number }[]).reduce((a, b) => a + b.completed, 0);
    };
    // acme completed three jobs of `shared` (external claims test); default none.
    expect(await completed('acme')).toBe(3);
    expect(await completed('default')).toBe(0);
    expect(await completed('acme', '?queue=shared')).toBe(3);
    expect(await completed('default', '?queue=shared')).toBe(0);
  });

  test('live events: counts and job changes of one project never reach another’s stream; ?job= of another project → 404', async () => {
    const streams: SseStream[] = [];
    try {
      const open = async (p: P) => {
        const s = await openSse(`${api.url}/dashboard/events`, { authorization: `Bearer ${key[p]}` });
        streams.push(s);
        expect(s.status).toBe(200);
        return s;
      };
      expect((await as('acme').put('/queues/live-acme', { external: true })).status).toBe(200);
      const live = { acme: await open('acme'), default: await open('default') };
      for (const p of PROJECTS) {
        const counts = (await live[p].waitFor((e) => e.event === 'counts')).data as { queues: Record<string, unknown> };
        expect(Object.keys(counts.queues).sort()).toEqual(Object.keys((await as(p).get('/dashboard/stats')).body.queues).sort());
      }
      expect(Object.keys(((await live.acme.waitFor((e) => e.event === 'counts')).data as { queues: object }).queues)).toContain('live-acme');
      expect(Object.keys(((await live.default.waitFor((e) => e.event === 'counts')).data as { queues: object }).queues)).not.toContain('live-acme');
      // The writers see the listener key at their next ownership round (≤ 1 s).
      await sleep(1200);
      const ids = {} as Record<P, string>;
      for (const p of PROJECTS) {
        expect((await as(p).put('/queues/live', { external: true })).status).toBe(200);
        const r = await as(p).post('/jobs', { queue: 'live', type: 'ext.live', payload: {} });
        expect(r.status).toBe(201);
        ids[p] = r.body.id;
      }
      for (const p of PROJECTS) {
        const e = await live[p].waitFor((x) => x.event === 'job' && (x.data as { id: string }).id === ids[p]);
        expect(e.data).toMatchObject({ id: ids[p], queue: 'live', status: 'waiting' });
      }
      // Both projects' changes were published by now (each stream got its own): neither stream holds the other's.
      await sleep(500);
      for (const p of PROJECTS) {
        const seenIds = live[p].events.filter((e) => e.event === 'job').map((e) => (e.data as { id: string }).id);
        expect(seenIds).not.toContain(ids[other(p)]);
      }
      const x = await openSse(`${api.url}/dashboard/events?job=${ids.acme}`, { authorization: `Bearer ${key.default}` });
      streams.push(x);
      expect(x.status).toBe(404);
    } finally {
      for (const s of streams) s.close();
    }
  });
});
