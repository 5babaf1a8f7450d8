import { randomBytes } from 'node:crypto';
import type Redis from 'ioredis';
import { createRedis } from '../../src/redis/connection';
import { until } from '../support/console-browser';
import { startTestApi, type TestApi } from '../support/http';
import { deleteByPrefix, REDIS_URL } from '../support/redis';

/**
 * Organizations and members (API.md v1.3): organizations, members with an
 * organization role and project roles, invitations (one-time, hashed, 7 days),
 * sessions with a current project and the switch, isolation between
 * organizations, and removal or a role change ending sessions at once.
 */
const ROOT = 'sk_' + randomBytes(32).toString('base64url');
const PW = 'a long enough password';
let api: TestApi;

const root = (r: any) => r.set('authorization', `Bearer ${ROOT}`);
const as = (token: string) => (r: any) => r.set('cookie', `sluice_session=${token}`).set('origin', api.url);

async function login(username: string, password = PW, project?: string): Promise<{ token: string; body: any }> {
  const r = await api.http.post('/auth/login').send({ username, password, ...(project ? { project } : {}) });
  expect([username, r.status]).toEqual([username, 200]);
  const cookie = ([] as string[]).concat(r.headers['set-cookie']).find((c) => c.startsWith('sluice_session='))!;
  return { token: cookie.slice('sluice_session='.length).split(';')[0], body: r.body };
}

/** Adds a member as root (or `by`), accepts its invitation when it is new; returns the answer. */
async function member(org: string, body: Record<string, unknown>, by: (r: any) => any = root): Promise<any> {
  const r = await by(api.http.post(`/orgs/${org}/members`)).send(body);
  expect([body.username, r.status, r.body.error]).toEqual([body.username, 201, undefined]);
  if (r.body.inviteToken) expect((await api.http.post('/auth/accept-invite').send({ token: r.body.inviteToken, password: PW })).status).toBe(200);
  return r.body;
}

beforeAll(async () => {
  api = await startTestApi('orgs', { AUTH: 'on', SLUICE_BOOTSTRAP_ADMIN_KEY: ROOT });
  for (const org of ['acme', 'beta', 'gamma']) expect((await root(api.http.post('/orgs')).send({ name: org })).status).toBe(201);
  for (const [name, org] of [['acme-shop', 'acme'], ['acme-ops', 'acme'], ['beta-web', 'beta'], ['gamma-x', 'gamma']]) {
    const r = await root(api.http.post('/projects')).send({ name, org });
    expect([r.status, r.body]).toEqual([201, { name, org, createdAt: expect.any(String) }]);
  }
});
afterAll(() => api?.close());

test('organizations: root creates and lists them; a duplicate is 409; a project names its organization (unknown → 404, default `default`)', async () => {
  expect((await root(api.http.post('/orgs')).send({ name: 'acme' })).status).toBe(409);
  expect((await root(api.http.post('/orgs')).send({ name: 'Bad Name' })).status).toBe(400);
  expect((await root(api.http.get('/orgs'))).body.map((o: { name: string }) => o.name)).toEqual(['default', 'acme', 'beta', 'gamma']);
  const r = await root(api.http.post('/projects')).send({ name: 'nowhere', org: 'nope' });
  expect([r.status, r.body.error.code]).toEqual([404, 'not_found']);
  expect((await root(api.http.post('/projects')).send({ name: 'plain' })).body.org).toBe('default');
  const list = (await root(api.http.get('/projects'))).body;
  expect(list.find((p: { name: string }) => p.name === 'acme-shop').org).toBe('acme');
  expect(list[0]).toMatchObject({ name: 'default', org: 'default' });
});

test('invitation lifecycle: the token is shown once, stored hashed, used once; reuse, expiry and a wrong token get one answer', async () => {
  const r = await root(api.http.post('/orgs/acme/members')).send({ username: 'ivy@example.com', orgRole: 'member', projects: { 'acme-shop': 'operator' } });
  expect(r.status).toBe(201);
  expect(r.body).toMatchObject({ username: 'ivy@example.com', org: 'acme', orgRole: 'member', projects: { 'acme-shop': 'operator' }, hidePayloads: false, invited: true });
  const token: string = r.body.inviteToken;
  expect(token).toMatch(/^inv_[A-Za-z0-9_-]{43}$/);
  expect(Date.parse(r.body.inviteExpiresAt) - Date.now()).toBeGreaterThan(7 * 24 * 3600e3 - 60e3);
  // Stored as its SHA-256 only.
  const rows: { token_hash: string }[] = await api.db.dataSource.query(`SELECT token_hash FROM org_invitations`);
  expect(JSON.stringify(rows)).not.toContain(token.slice(4));
  // No login before the password is set (the same answer as a wrong password).
  const early = await api.http.post('/auth/login').send({ username: 'ivy@example.com', password: PW });
  expect([early.status, early.body.error.message]).toEqual([401, 'invalid username or password']);
  // A password that breaks the rules spends nothing.
  const weak = await api.http.post('/auth/accept-invite').send({ token, password: 'short' });
  expect([weak.status, weak.body.error.details[0].path]).toEqual([400, 'password']);
  const ok = await api.http.post('/auth/accept-invite').send({ token, password: PW });
  expect([ok.status, ok.body]).toEqual([200, { user: { id: r.body.id, username: 'ivy@example.com' }, org: 'acme' }]);
  const hash: { password_hash: string }[] = await api.db.dataSource.query(`SELECT password_hash FROM users WHERE id = $1`, [r.body.id]);
  expect(hash[0].password_hash).toMatch(/^\$argon2id\$/);
  const { body } = await login('ivy@example.com');
  expect(body).toMatchObject({ project: 'acme-shop', role: 'operator' });

  // Reuse, a wrong token, an expired one, a malformed one: one answer, word for word.
  const expired = await root(api.http.post('/orgs/acme/members')).send({ username: 'late@example.com', orgRole: 'member' });
  await api.db.dataSource.query(`UPDATE org_invitations SET expires_at = now() - interval '1 second' WHERE user_id = $1`, [expired.body.id]);
  const answers = [];
  for (const t of [token, 'inv_' + randomBytes(32).toString('base64url'), expired.body.inviteToken, 'nope']) {
    const a = await api.http.post('/auth/accept-invite').send({ token: t, password: 'another long password' });
    answers.push([a.status, a.body.error.code, a.body.error.message, a.body.error.details]);
  }
  expect(new Set(answers.map((a) => JSON.stringify(a))).size).toBe(1);
  expect(answers[0]).toEqual([400, 'validation_failed', 'invalid request: token', [{ path: 'token', message: 'unknown, used or expired invitation' }]]);
  // The reuse did not change the password.
  expect((await api.http.post('/auth/login').send({ username: 'ivy@example.com', password: 'another long password' })).status).toBe(401);
  // An existing user joining another organization gets no token (its password stays).
  const again = await root(api.http.post('/orgs/beta/members')).send({ username: 'IVY@example.com', orgRole: 'viewer' });
  expect(again.status).toBe(201);
  expect(again.body.inviteToken).toBeUndefined();
  expect(again.body).toMatchObject({ id: r.body.id, invited: false });
  // Joining twice → 409.
  expect((await root(api.http.post('/orgs/beta/members')).send({ username: 'ivy@example.com', orgRole: 'member' })).status).toBe(409);
});

test('bad member bodies: a role in a project of another organization, an unknown role, an owner made by an admin', async () => {
  const bad = async (body: object, path: string) => {
    const r = await root(api.http.post('/orgs/acme/members')).send(body);
    expect([r.status, r.body.error.code, r.body.error.details.map((d: { path: string }) => d.path)]).toEqual([400, 'validation_failed', [path]]);
  };
  await bad({ username: 'x1', orgRole: 'member', projects: { 'beta-web': 'viewer' } }, 'projects.beta-web');
  await bad({ username: 'x1', orgRole: 'member', projects: { 'acme-shop': 'worker' } }, 'projects.acme-shop');
  await bad({ username: 'x1', orgRole: 'member', projects: { 'acme-shop': 'root' } }, 'projects.acme-shop');
  await bad({ username: 'x1', orgRole: 'boss' }, 'orgRole');
  await bad({ username: 'x1', orgRole: 'member', projects: [] }, 'projects');
  await bad({ username: 'x1', orgRole: 'member', extra: 1 }, 'extra');
  expect((await root(api.http.get('/orgs/nope/members'))).status).toBe(404);

  await member('acme', { username: 'adam', orgRole: 'admin' });
  const adam = as((await login('adam')).token);
  const r = await adam(api.http.post('/orgs/acme/members')).send({ username: 'x2', orgRole: 'owner' });
  expect([r.status, r.body.error.code]).toEqual([403, 'forbidden']);
});

test('a session acts in its current project with the role there; POST /auth/project switches; GET /auth/session lists the projects', async () => {
  await member('acme', { username: 'mia', orgRole: 'member', projects: { 'acme-shop': 'viewer', 'acme-ops': 'operator' } });
  await member('beta', { username: 'mia', orgRole: 'admin' });
  const { token, body } = await login('mia');
  const mia = as(token);
  // The first project by name (no `default` role).
  expect(body).toMatchObject({ project: 'acme-ops', role: 'operator' });
  const s = (await mia(api.http.get('/auth/session'))).body;
  expect(s).toMatchObject({ kind: 'user', project: 'acme-ops', role: 'operator', org: 'acme', hidePayloads: false });
  expect(s.projects).toEqual([
    { name: 'acme-ops', org: 'acme', role: 'operator' },
    { name: 'acme-shop', org: 'acme', role: 'viewer' },
    { name: 'beta-web', org: 'beta', role: 'admin' },
  ]);
  // operator in acme-ops: pause works there.
  expect((await mia(api.http.post('/queues/q1/pause'))).status).toBe(200);
  // Switch to acme-shop (viewer): pause is refused, reads are of acme-shop.
  const sw = await mia(api.http.post('/auth/project')).send({ project: 'acme-shop' });
  expect([sw.status, sw.body.project, sw.body.role, sw.body.org]).toEqual([200, 'acme-shop', 'viewer', 'acme']);
  expect((await mia(api.http.post('/queues/q1/pause'))).status).toBe(403);
  expect((await mia(api.http.get('/queues'))).body).toEqual([]);
  // No role in gamma-x, nor in a project that does not exist: 403 and the session stays where it was.
  for (const project of ['gamma-x', 'default', 'no-such']) expect((await mia(api.http.post('/auth/project')).send({ project })).status).toBe(403);
  expect((await mia(api.http.get('/auth/session'))).body.project).toBe('acme-shop');
  expect((await mia(api.http.post('/auth/project')).send({ project: 'Bad Name' })).status).toBe(400);
  // A key has no session to switch.
  expect((await root(api.http.post('/auth/project')).send({ project: 'acme-shop' })).status).toBe(403);
  // login with project
  expect((await login('mia', PW, 'beta-web')).body).toMatchObject({ project: 'beta-web', role: 'admin' });
  expect((await api.http.post('/auth/login').send({ username: 'mia', password: PW, project: 'gamma-x' })).status).toBe(401);
  // The user's organizations.
  expect((await mia(api.http.get('/orgs'))).body.map((o: { name: string; orgRole: string }) => [o.name, o.orgRole])).toEqual([
    ['acme', 'member'],
    ['beta', 'admin'],
  ]);
});

test('a member of two organizations sees nothing of a third: its members, projects, jobs and queues', async () => {
  await member('acme', { username: 'tom', orgRole: 'owner' });
  await member('beta', { username: 'tom', orgRole: 'admin' });
  await root(api.http.post('/jobs')).set('x-sluice-project', 'gamma-x').send({ queue: 'secret', type: 'diag.echo', payload: { s: 1 } });
  const tom = as((await login('tom')).token);
  const gm = await tom(api.http.get('/orgs/gamma/members'));
  const unknown = await tom(api.http.get('/orgs/zzz/members'));
  expect([gm.status, gm.body.error.code]).toEqual([404, 'not_found']);
  expect(unknown.status).toBe(404);
  for (const m of ['post', 'patch', 'delete'] as const) {
    const path = m === 'post' ? '/orgs/gamma/members' : '/orgs/gamma/members/someone';
    const r = await tom(api.http[m](path)).send(m === 'delete' ? undefined : { username: 'x', orgRole: 'member' });
    expect([m, r.status]).toEqual([m, 404]);
  }
  expect((await tom(api.http.post('/auth/project')).send({ project: 'gamma-x' })).status).toBe(403);
  const projects = (await tom(api.http.get('/auth/session'))).body.projects.map((p: { name: string }) => p.name);
  expect(projects).toEqual(['acme-ops', 'acme-shop', 'beta-web']);
  for (const p of projects) {
    expect((await tom(api.http.post('/auth/project')).send({ project: p })).status).toBe(200);
    expect((await tom(api.http.get('/queues'))).body.map((q: { name: string }) => q.name)).not.toContain('secret');
    expect((await tom(api.http.get('/jobs?queue=secret'))).body.items).toEqual([]);
  }
  expect((await tom(api.http.get('/orgs'))).body.map((o: { name: string }) => o.name)).toEqual(['acme', 'beta']);
  // X-Sluice-Project is for root keys: a session ignores it.
  expect((await tom(api.http.get('/queues')).set('x-sluice-project', 'gamma-x')).body.map((q: { name: string }) => q.name)).not.toContain('secret');
});

test('removal mid-session and a role change end the member’s sessions at once; owners: only an owner changes one, the last one stays', async () => {
  await member('acme', { username: 'rob', orgRole: 'member', projects: { 'acme-shop': 'operator' } });
  await member('acme', { username: 'oona', orgRole: 'owner' });
  const oona = as((await login('oona')).token);
  let rob = as((await login('rob')).token);
  expect((await rob(api.http.post('/queues/q2/pause'))).status).toBe(200);
  // A change: every session of rob ends (the next request is 401).
  const ch = await oona(api.http.patch('/orgs/acme/members/rob')).send({ projects: { 'acme-shop': 'viewer' } });
  expect([ch.status, ch.body.projects]).toEqual([200, { 'acme-shop': 'viewer' }]);
  expect((await rob(api.http.get('/queues'))).status).toBe(401);
  rob = as((await login('rob')).token);
  expect((await rob(api.http.get('/auth/session'))).body.role).toBe('viewer');
  expect((await rob(api.http.post('/queues/q2/pause'))).status).toBe(403);
  // The member list shows it.
  const list = (await oona(api.http.get('/orgs/acme/members'))).body;
  expect(list.find((m: { username: string }) => m.username === 'rob')).toMatchObject({ orgRole: 'member', projects: { 'acme-shop': 'viewer' } });
  // Removal mid-session.
  const rm = await oona(api.http.delete('/orgs/acme/members/rob'));
  expect([rm.status, rm.body.removed, rm.body.username]).toEqual([200, true, 'rob']);
  expect((await rob(api.http.get('/queues'))).status).toBe(401);
  expect((await api.http.post('/auth/login').send({ username: 'rob', password: PW })).status).toBe(401);
  expect((await oona(api.http.delete('/orgs/acme/members/rob'))).status).toBe(404);
  // An admin may not touch an owner; an owner may; the last owner stays.
  const adam = as((await login('adam')).token);
  expect((await adam(api.http.patch('/orgs/acme/members/oona')).send({ orgRole: 'member' })).status).toBe(403);
  expect((await adam(api.http.delete('/orgs/acme/members/oona'))).status).toBe(403);
  expect((await oona(api.http.patch('/orgs/acme/members/tom')).send({ orgRole: 'admin' })).status).toBe(200);
  const last = await oona(api.http.patch('/orgs/acme/members/oona')).send({ orgRole: 'admin' });
  expect([last.status, last.body.error.code]).toEqual([409, 'conflict']);
  expect((await oona(api.http.delete('/orgs/acme/members/oona'))).status).toBe(409);
  // An org member (not owner/admin) may not manage members: 403; an unknown member → 404.
  await member('acme', { username: 'vic', orgRole: 'viewer' });
  const vic = as((await login('vic')).token);
  expect((await vic(api.http.get('/orgs/acme/members'))).status).toBe(403);
  expect((await oona(api.http.patch('/orgs/acme/members/nobody')).send({ hidePayloads: true })).status).toBe(404);
  expect((await oona(api.http.patch('/orgs/acme/members/vic')).send({})).status).toBe(400);
  // An org viewer is viewer of every project of the organization.
  expect((await vic(api.http.get('/auth/session'))).body.projects.map((p: { name: string; role: string }) => `${p.name}:${p.role}`)).toEqual(['acme-ops:viewer', 'acme-shop:viewer']);
});

test('an owner or admin creates projects in its organization (it is then admin there); elsewhere 404, a plain member 403', async () => {
  const oona = as((await login('oona')).token);
  const r = await oona(api.http.post('/projects')).send({ name: 'acme-new', org: 'acme' });
  expect([r.status, r.body.org]).toEqual([201, 'acme']);
  expect((await oona(api.http.post('/auth/project')).send({ project: 'acme-new' })).body.role).toBe('admin');
  expect((await oona(api.http.post('/projects')).send({ name: 'beta-new', org: 'beta' })).status).toBe(404);
  expect((await oona(api.http.post('/projects')).send({ name: 'dflt-new' })).status).toBe(404);
  const vic = as((await login('vic')).token);
  expect((await vic(api.http.post('/projects')).send({ name: 'vic-new', org: 'acme' })).status).toBe(403);
  // A plain member of acme-new? None: no role given, so no member but owners and admins sees it.
  expect((await vic(api.http.get('/auth/session'))).body.projects.map((p: { name: string }) => p.name)).toContain('acme-new');
});

test('POST /users and /users/:id keep working: the user becomes a member of the project’s organization with that role', async () => {
  const r = await root(api.http.post('/users')).set('x-sluice-project', 'acme-ops').send({ username: 'legacy-u', password: PW, role: 'producer' });
  expect(r.status).toBe(201);
  const members = (await root(api.http.get('/orgs/acme/members'))).body;
  expect(members.find((m: { username: string }) => m.username === 'legacy-u')).toMatchObject({ orgRole: 'member', projects: { 'acme-ops': 'producer' } });
  expect((await login('legacy-u')).body).toMatchObject({ project: 'acme-ops', role: 'producer' });
  expect((await root(api.http.patch(`/users/${r.body.id}`)).set('x-sluice-project', 'acme-ops').send({ role: 'viewer' })).body.role).toBe('viewer');
  expect((await root(api.http.delete(`/users/${r.body.id}`)).set('x-sluice-project', 'acme-ops')).status).toBe(200);
  expect((await root(api.http.get('/orgs/acme/members'))).body.find((m: { username: string }) => m.username === 'legacy-u')).toBeUndefined();
});

test('every change is in the operator log with its actor', async () => {
  type Entry = { action: string; actor: string; target: string | null; status: number; project: string };
  // Organization changes are the organization's (GET /orgs/:org/audit-log), the rest the actor's project's.
  const acme = (await root(api.http.get('/orgs/acme/audit-log?limit=500'))).body.items as Entry[];
  const dflt = (await root(api.http.get('/audit-log?limit=500'))).body.items as Entry[];
  const mia = (await root(api.http.get('/audit-log?limit=500')).set('x-sluice-project', 'acme-shop')).body.items as Entry[];
  const log = [...acme, ...dflt, ...mia];
  expect(new Set(acme.map((e) => e.project))).toEqual(new Set(['org:acme']));
  // Nothing of acme's member changes is in another organization's log.
  const beta = (await root(api.http.get('/orgs/beta/audit-log?limit=500'))).body.items as Entry[];
  expect(beta.filter((e) => e.target?.startsWith('acme/'))).toEqual([]);
  // Owners and admins read their organization's log; a viewer may not.
  expect((await as((await login('oona')).token)(api.http.get('/orgs/acme/audit-log'))).status).toBe(200);
  expect((await as((await login('vic')).token)(api.http.get('/orgs/acme/audit-log'))).status).toBe(403);
  const actions = new Set(log.map((e) => e.action));
  for (const a of ['org.create', 'org.member.add', 'org.member.update', 'org.member.remove', 'auth.accept-invite', 'auth.project']) expect([a, actions.has(a)]).toEqual([a, true]);
  const removal = log.find((e) => e.action === 'org.member.remove' && e.target === 'acme/rob' && e.status === 200);
  expect(removal?.actor).toMatch(/^user:/);
  expect(log.find((e) => e.action === 'org.member.add' && e.target === 'acme/ivy@example.com')).toBeTruthy();
  // The token never reaches the log.
  expect(JSON.stringify(log)).not.toMatch(/inv_/);
});

test('a Redis loss takes no member data: every prefix key deleted, members log in again with the same projects and roles', async () => {
  const before = (await as((await login('mia')).token)(api.http.get('/auth/session'))).body.projects;
  const stale = (await login('tom')).token;
  const redis = createRedis({ redisUrl: REDIS_URL, redisClusterNodes: null });
  try {
    await deleteByPrefix(redis as Redis, api.prefix);
  } finally {
    redis.disconnect();
  }
  // Sessions are the one thing Redis alone held: that one is gone.
  await until(async () => (await api.http.get('/queues').set('cookie', `sluice_session=${stale}`)).status === 401);
  const mia = as((await login('mia')).token);
  expect((await mia(api.http.get('/auth/session'))).body.projects).toEqual(before);
  expect((await mia(api.http.post('/auth/project')).send({ project: 'beta-web' })).body.role).toBe('admin');
  const tom = as((await login('tom')).token);
  expect((await tom(api.http.get('/orgs/acme/members'))).status).toBe(200);
});
