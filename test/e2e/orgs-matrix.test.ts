import { randomBytes } from 'node:crypto';
import { managesOrg, MEMBER_ROLES, memberProjectRole, ORG_ROLES, roleSatisfies, type OrgRole, type Requirement, type Role } from '../../src/core/access';
import { routeTable, type RouteAccess } from '../../src/http/route-table';
import { startTestApi, type TestApi } from '../support/http';

/**
 * The role matrix of organizations (API.md v1.3), generated from the live
 * route table: for every organization role × project role (none included),
 * a member signed in to the project calls every route that is not public,
 * and gets 403 exactly where its effective role there (or, on the
 * organization's routes, its organization role) may not — never 401/403
 * where it may. The roles are the guard's: no handler decides them.
 */
const ROOT = 'sk_' + randomBytes(32).toString('base64url');
const PW = 'a long enough password';
let api: TestApi;
let table: RouteAccess[];
const ID = '0190f5a0-0000-7000-8000-000000000001';

interface Cell {
  orgRole: OrgRole;
  given: Role | null;
  username: string;
  token: string | null;
}
const cells: Cell[] = [];

const root = (r: any) => r.set('authorization', `Bearer ${ROOT}`);

function concrete(path: string, org: string): string {
  const url = path.replace(/:id\b/g, ID).replace(/:name\b/g, 'mx-q').replace(/:org\b/g, org).replace(/:username\b/g, 'nobody');
  return url === '/dashboard/events' ? `${url}?job=${ID}` : url;
}

/** `body`: `{}`, or for an `org-admin` route without `:org` (POST /projects) the organization it names. */
function call(method: string, url: string, token: string, body = '{}') {
  const m = method.toLowerCase() as 'get' | 'post' | 'put' | 'patch' | 'delete';
  let r = api.http[m](url).set('cookie', `sluice_session=${token}`).set('origin', api.url);
  if (m !== 'get' && m !== 'delete') r = r.set('content-type', 'application/json').send(body);
  return r;
}
const bodyFor = (r: RouteAccess, org: string) => (r.required!.includes('org-admin') && !r.path.includes(':org') ? JSON.stringify({ org }) : '{}');

/** What the contract says a member may call: the effective role in the session's project, `user`, `org-admin` of `:org`. */
function may(cell: Cell, required: readonly Requirement[]): boolean {
  const role = memberProjectRole(cell.orgRole, cell.given);
  if (required.includes('user')) return true;
  if (required.includes('org-admin') && managesOrg(cell.orgRole)) return true;
  return role !== null && roleSatisfies(role, false, required);
}

beforeAll(async () => {
  api = await startTestApi('orgsmatrix', { AUTH: 'on', SLUICE_BOOTSTRAP_ADMIN_KEY: ROOT });
  table = routeTable(api.app);
  expect((await root(api.http.post('/orgs')).send({ name: 'mx' })).status).toBe(201);
  expect((await root(api.http.post('/orgs')).send({ name: 'other' })).status).toBe(201);
  expect((await root(api.http.post('/projects')).send({ name: 'mx-p', org: 'mx' })).status).toBe(201);
  expect((await root(api.http.post('/projects')).send({ name: 'other-p', org: 'other' })).status).toBe(201);
  for (const orgRole of ORG_ROLES) {
    for (const given of [null, ...MEMBER_ROLES] as (Role | null)[]) {
      const username = `m-${orgRole}-${given ?? 'none'}`;
      const r = await root(api.http.post('/orgs/mx/members')).send({ username, orgRole, ...(given ? { projects: { 'mx-p': given } } : {}) });
      expect(r.status).toBe(201);
      expect((await api.http.post('/auth/accept-invite').send({ token: r.body.inviteToken, password: PW })).status).toBe(200);
      const l = await api.http.post('/auth/login').send({ username, password: PW, project: 'mx-p' });
      const c = ([] as string[]).concat(l.headers['set-cookie'] ?? []).find((x) => x.startsWith('sluice_session='));
      cells.push({ orgRole, given, username, token: c ? c.slice('sluice_session='.length).split(';')[0] : null });
    }
  }
}, 120_000);
afterAll(() => api?.close());

test('a member with no role in the project cannot sign in to it; every other cell can, with its effective role', async () => {
  for (const cell of cells) {
    const role = memberProjectRole(cell.orgRole, cell.given);
    expect([cell.username, cell.token !== null]).toEqual([cell.username, role !== null]);
    if (!cell.token) continue;
    const s = await api.http.get('/auth/session').set('cookie', `sluice_session=${cell.token}`);
    expect([cell.username, s.body.project, s.body.role]).toEqual([cell.username, 'mx-p', role]);
  }
});

test('org role × project role × every route of the live table: 403 exactly where the role may not', async () => {
  const wrong: string[] = [];
  let calls = 0;
  for (const cell of cells.filter((c) => c.token)) {
    for (const r of table) {
      const req = r.required as Requirement[];
      if (req.includes('public')) continue;
      const res = await call(r.method, concrete(r.path, 'mx'), cell.token!, bodyFor(r, 'mx'));
      calls++;
      const ok = may(cell, req);
      if (res.status === 401) wrong.push(`${cell.username} ${r.method} ${r.path} → 401 (session ended?)`);
      if (ok && res.status === 403) wrong.push(`${cell.username} may ${r.method} ${r.path} but got 403`);
      if (!ok && res.status !== 403) wrong.push(`${cell.username} may not ${r.method} ${r.path} but got ${res.status}`);
    }
  }
  expect(wrong).toEqual([]);
  expect(calls).toBeGreaterThan(17 * 60);
}, 300_000);

test("the organization routes of an organization the member is not in: 404 for every cell, owners and admins included", async () => {
  const orgRoutes = table.filter((r) => r.required!.includes('org-admin'));
  expect(orgRoutes.length).toBeGreaterThanOrEqual(6);
  const wrong: string[] = [];
  for (const cell of cells.filter((c) => c.token)) {
    for (const r of orgRoutes) {
      const res = await call(r.method, concrete(r.path, 'other'), cell.token!, bodyFor(r, 'other'));
      if (res.status !== 404 || res.body.error?.code !== 'not_found') wrong.push(`${cell.username} ${r.method} ${r.path} (other) → ${res.status}`);
    }
  }
  expect(wrong).toEqual([]);
});
