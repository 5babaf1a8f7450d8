import { randomBytes } from 'node:crypto';
import { roleSatisfies, ROLES, type Requirement, type Role } from '../../src/core/access';
import { routeTable, type RouteAccess } from '../../src/http/route-table';
import { startTestApi, type TestApi } from '../support/http';

/**
 * Routes as data (issue: security): the generated 401/403 matrix. Every
 * route the live Fastify router holds must be in the @Access table; every
 * non-public route answers 401 without credentials and 403 for each role
 * that may not call it, and never 401/403 for a role that may.
 */
const BOOTSTRAP = 'sk_' + randomBytes(32).toString('base64url');
let api: TestApi;
let table: RouteAccess[];
const keyOf = new Map<Role, string>();

beforeAll(async () => {
  api = await startTestApi('authmatrix', { AUTH: 'on', SLUICE_BOOTSTRAP_ADMIN_KEY: BOOTSTRAP });
  table = routeTable(api.app);
  for (const role of ROLES) {
    const r = await api.http.post('/keys').set('authorization', `Bearer ${BOOTSTRAP}`).send({ name: `matrix-${role}`, role });
    expect(r.status).toBe(201);
    keyOf.set(role, r.body.secret);
  }
});
afterAll(() => api?.close());

/**
 * A concrete URL for a route pattern: ids that exist nowhere, a valid queue
 * name; the live-update stream for a job that does not exist, so it answers
 * at once (404) instead of streaming.
 */
function concrete(path: string): string {
  const url = path
    .replace(/:id\b/g, '0190f5a0-0000-7000-8000-000000000001')
    .replace(/:name\b/g, 'matrix-q')
    .replace(/:org\b/g, 'default')
    .replace(/:username\b/g, 'nobody');
  return url === '/dashboard/events' ? `${url}?job=0190f5a0-0000-7000-8000-000000000001` : url;
}

function call(method: string, path: string, key?: string, session?: string) {
  const m = method.toLowerCase() as 'get' | 'post' | 'put' | 'patch' | 'delete';
  let r = api.http[m](concrete(path));
  if (key) r = r.set('authorization', `Bearer ${key}`);
  if (session) r = r.set('cookie', `sluice_session=${session}`).set('origin', api.url);
  if (m !== 'get' && m !== 'delete') r = r.set('content-type', 'application/json').send('{}');
  return r;
}

test('every route of the live router has an @Access declaration, and the table has no route the router lacks', () => {
  const live = (api.app.getHttpAdapter().getInstance() as unknown as { sluiceRoutes: { method: string; url: string }[] }).sluiceRoutes
    .filter((r) => r.method !== 'HEAD' && !/^\/docs/.test(r.url));
  const key = (m: string, u: string) => `${m} ${u}`;
  const declared = new Map(table.map((r) => [key(r.method, r.path), r]));
  const undeclared = live.filter((r) => !declared.get(key(r.method, r.url))?.required);
  expect(undeclared).toEqual([]);
  const liveSet = new Set(live.map((r) => key(r.method, r.url)));
  expect(table.filter((r) => !liveSet.has(key(r.method, r.path)))).toEqual([]);
  expect(table.length).toBeGreaterThan(35);
});

test('no credentials → 401 on every route that is not public (/metrics too: AUTH=on)', async () => {
  const wrong: string[] = [];
  for (const r of table) {
    if (r.required!.includes('public')) continue;
    const res = await call(r.method, r.path);
    if (res.status !== 401 || res.body?.error?.code !== 'unauthorized') wrong.push(`${r.method} ${r.path} → ${res.status}`);
  }
  expect(wrong).toEqual([]);
});

test('an unknown, malformed or foreign-format key → 401', async () => {
  for (const bad of ['sk_' + randomBytes(32).toString('base64url'), 'nope', BOOTSTRAP + 'x']) {
    const r = await api.http.get('/queues').set('authorization', `Bearer ${bad}`);
    expect(r.status).toBe(401);
  }
  expect((await api.http.get('/queues').set('authorization', `Basic ${BOOTSTRAP}`)).status).toBe(401);
});

test('each role: 403 exactly where its role may not, never 401/403 where it may', async () => {
  const wrong: string[] = [];
  for (const role of ROLES) {
    for (const r of table) {
      const req = r.required as Requirement[];
      // `metrics`: installation-wide, so a root key (or METRICS_TOKEN) only: every project role → 403 (API.md v1.2).
      if (req.includes('public')) continue;
      const res = await call(r.method, r.path, keyOf.get(role));
      const may = roleSatisfies(role, false, req);
      if (may && (res.status === 401 || res.status === 403)) wrong.push(`${role} may ${r.method} ${r.path} but got ${res.status}`);
      if (!may && res.status !== 403) wrong.push(`${role} may not ${r.method} ${r.path} but got ${res.status}`);
    }
  }
  expect(wrong).toEqual([]);
});

test('each role through a dashboard session cookie: the same 403 matrix', async () => {
  const sessionOf = new Map<Role, string>();
  for (const role of ROLES) {
    const username = `matrix-${role}`;
    const password = randomBytes(12).toString('base64url');
    expect((await api.http.post('/users').set('authorization', `Bearer ${BOOTSTRAP}`).send({ username, password, role })).status).toBe(201);
    const r = await api.http.post('/auth/login').send({ username, password });
    expect(r.status).toBe(200);
    sessionOf.set(role, /sluice_session=([^;]+)/.exec(String(r.headers['set-cookie']))![1]);
  }
  const wrong: string[] = [];
  for (const role of ROLES) {
    for (const r of table) {
      const req = r.required as Requirement[];
      // `metrics`: installation-wide, so a root key (or METRICS_TOKEN) only: every project role → 403 (API.md v1.2).
      if (req.includes('public')) continue;
      const res = await call(r.method, r.path, undefined, sessionOf.get(role));
      // `user` routes take any session; `org-admin` routes need owner/admin of `:org` (these users are plain members of default: 403).
      const may = roleSatisfies(role, false, req) || req.includes('user');
      if (may && (res.status === 401 || res.status === 403)) wrong.push(`${role} may ${r.method} ${r.path} but got ${res.status}`);
      if (!may && res.status !== 403) wrong.push(`${role} may not ${r.method} ${r.path} but got ${res.status}`);
    }
  }
  expect(wrong).toEqual([]);
});

test('public routes need nothing', async () => {
  for (const r of table.filter((x) => x.required!.includes('public'))) {
    const res = await call(r.method, r.path);
    // 400: a body the route refuses (`POST /auth/login` with `{}`), never a credentials problem.
    expect([200, 301, 302, 400, 503]).toContain(res.status);
  }
});

describe('rules beyond the role (API.md v1.2)', () => {
  test('/metrics: a root key → 200; no credentials → 401; each role (key) → 403', async () => {
    expect((await api.http.get('/metrics').set('authorization', `Bearer ${BOOTSTRAP}`)).status).toBe(200);
    expect((await api.http.get('/metrics')).status).toBe(401);
    for (const role of ROLES) expect([role, (await api.http.get('/metrics').set('authorization', `Bearer ${keyOf.get(role)}`)).status]).toEqual([role, 403]);
  });

  test("root keys are root's: a project admin's GET /keys does not list them and DELETE of one → 404; root sees them", async () => {
    const rootKeys = (await api.http.get('/keys').set('authorization', `Bearer ${BOOTSTRAP}`)).body.filter((k: { root: boolean }) => k.root);
    expect(rootKeys.length).toBe(1);
    const adminList = await api.http.get('/keys').set('authorization', `Bearer ${keyOf.get('admin')}`);
    expect(adminList.status).toBe(200);
    expect(adminList.body.filter((k: { root: boolean }) => k.root)).toEqual([]);
    const del = await api.http.delete(`/keys/${rootKeys[0].id}`).set('authorization', `Bearer ${keyOf.get('admin')}`);
    expect([del.status, del.body.error?.code]).toEqual([404, 'not_found']);
    expect((await api.http.get('/projects').set('authorization', `Bearer ${BOOTSTRAP}`)).status).toBe(200);
  });

  test('a worker key claims only from external queues (403 elsewhere, a queue never made too); admin may claim from any queue of its project', async () => {
    const rootReq = (r: ReturnType<typeof api.http.get>) => r.set('authorization', `Bearer ${BOOTSTRAP}`);
    expect((await rootReq(api.http.put('/queues/matrix-ext')).send({ external: true })).status).toBe(200);
    expect((await rootReq(api.http.put('/queues/matrix-normal')).send({})).status).toBe(200);
    const claim = (queue: string, role: Role) => api.http.post(`/queues/${queue}/claim`).set('authorization', `Bearer ${keyOf.get(role)}`).send({ workerId: `matrix-${role}` });
    expect((await claim('matrix-ext', 'worker')).status).toBe(200);
    for (const q of ['matrix-normal', 'matrix-never-made']) {
      const r = await claim(q, 'worker');
      expect([q, r.status, r.body.error?.code]).toEqual([q, 403, 'forbidden']);
    }
    expect((await claim('matrix-normal', 'admin')).status).toBe(200);
  });
});

describe('404 across projects', () => {
  /** Routes whose `:name` names a queue of the caller's own project to create or claim from: they act there, never on another project's queue. */
  const ACT_IN_OWN_PROJECT = new Set(['PUT /queues/:name', 'POST /queues/:name/pause', 'POST /queues/:name/claim']);
  /** A body each route's validation accepts, so that what answers is the lookup. */
  const BODIES: Record<string, object> = {
    'POST /jobs/:id/heartbeat': { lockToken: 'x' },
    'POST /jobs/:id/complete': { lockToken: 'x' },
    'POST /jobs/:id/fail': { lockToken: 'x', error: { message: 'x' } },
    'POST /jobs/:id/release': { lockToken: 'x' },
    'PATCH /schedules/:id': { enabled: false },
    'PATCH /users/:id': { role: 'viewer' },
    'POST /queues/:name/claim': { workerId: 'matrix-w' },
  };
  const ids: Record<string, string> = {};
  // A queue only the other project has (the passes above created `matrix-q` in default).
  const root = (r: ReturnType<typeof api.http.get>) => r.set('authorization', `Bearer ${BOOTSTRAP}`).set('x-sluice-project', 'matrix-other');

  beforeAll(async () => {
    expect((await api.http.post('/projects').set('authorization', `Bearer ${BOOTSTRAP}`).send({ name: 'matrix-other' })).status).toBe(201);
    expect((await root(api.http.put('/queues/matrix-oq')).send({ external: true })).status).toBe(200);
    const job = await root(api.http.post('/jobs')).send({ queue: 'matrix-oq', type: 'ext.task' });
    expect(job.status).toBe(201);
    ids['/jobs'] = job.body.id;
    expect((await root(api.http.put('/queues/matrix-of')).send({ external: true })).status).toBe(200);
    const flow = await root(api.http.post('/flows')).send({ jobs: [{ ref: 'a', queue: 'matrix-of', type: 'ext.task' }, { ref: 'b', queue: 'matrix-of', type: 'ext.task', dependsOn: ['a'] }] });
    expect(flow.status).toBe(201);
    ids['/flows'] = flow.body.flowId;
    const s = await root(api.http.post('/schedules')).send({ name: 'matrix-s', cron: '0 3 * * *', queue: 'matrix-oq', type: 'ext.task' });
    expect(s.status).toBe(201);
    ids['/schedules'] = s.body.id;
    const k = await root(api.http.post('/keys')).send({ name: 'matrix-other-key', role: 'viewer' });
    expect(k.status).toBe(201);
    ids['/keys'] = k.body.id;
    const u = await root(api.http.post('/users')).send({ username: 'matrix-other-user', password: randomBytes(12).toString('base64url'), role: 'viewer' });
    expect(u.status).toBe(201);
    ids['/users'] = u.body.id;
  });

  test("every route with an id or a name: another project's → 404 (never 403), whatever the caller's role may", async () => {
    const wrong: string[] = [];
    // The routes that must answer 404 first: the others create the name in the caller's project.
    const routes = table
      .filter((r) => /:(id|name)\b/.test(r.path) && !r.required!.includes('public'))
      .sort((a, b) => Number(ACT_IN_OWN_PROJECT.has(`${a.method} ${a.path}`)) - Number(ACT_IN_OWN_PROJECT.has(`${b.method} ${b.path}`)));
    expect(routes.length).toBeGreaterThan(15);
    for (const r of routes) {
      const route = `${r.method} ${r.path}`;
      const base = Object.keys(ids).find((b) => r.path.startsWith(`${b}/:id`));
      if (r.path.includes(':id') && !base) {
        wrong.push(`${route}: no id of another project to try (add one to this test)`);
        continue;
      }
      const url = r.path.replace(':id', base ? ids[base] : '').replace(':name', 'matrix-oq');
      const m = r.method.toLowerCase() as 'get' | 'post' | 'put' | 'patch' | 'delete';
      let req = api.http[m](url).set('authorization', `Bearer ${keyOf.get('admin')}`);
      if (m !== 'get' && m !== 'delete') req = req.send(BODIES[route] ?? {});
      const res = await req;
      if (ACT_IN_OWN_PROJECT.has(route)) {
        if (res.status !== 200) wrong.push(`${route} → ${res.status} (acts in the caller's project: 200)`);
      } else if (res.status !== 404 || res.body?.error?.code !== 'not_found') {
        wrong.push(`${route} → ${res.status}`);
      }
    }
    expect(wrong).toEqual([]);
    // The other project's things are as they were.
    const q = await root(api.http.get('/queues/matrix-oq'));
    expect(q.body).toMatchObject({ paused: false, external: true, counts: { waiting: 1 } });
    expect((await root(api.http.get(`/jobs/${ids['/jobs']}`))).body.status).toBe('waiting');
    expect((await root(api.http.get(`/flows/${ids['/flows']}`))).body.counts).toMatchObject({ waiting: 1, blocked: 1, cancelled: 0 });
    expect((await root(api.http.get(`/schedules/${ids['/schedules']}`))).body.enabled).toBe(true);
    expect((await root(api.http.get('/keys'))).body.map((k: { id: string }) => k.id)).toContain(ids['/keys']);
    expect((await root(api.http.get('/users'))).body.map((u: { id: string; role: string }) => [u.id, u.role])).toEqual([[ids['/users'], 'viewer']]);
  });
});
