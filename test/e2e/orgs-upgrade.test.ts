import { randomBytes } from 'node:crypto';
import type Redis from 'ioredis';
import { hashSecret } from '../../src/core/api-key';
import { Organizations1796002200000 } from '../../src/postgres/migrations/1796002200000-Organizations';
import { createRedis } from '../../src/redis/connection';
import { startTestApi, type TestApi } from '../support/http';
import { openTestDb, type TestDb } from '../support/postgres';
import { deleteByPrefix, REDIS_URL, testPrefix } from '../support/redis';

/**
 * Upgrade in place to organizations (API.md v1.3): users, their roles in
 * several projects, a disabled user, API keys and live dashboard sessions of
 * the version before organizations keep their meaning once the new version
 * migrates: every login works with its password, every role is what it was,
 * every session cookie still signs in to the same project with the same role.
 *
 * The "before" is written by the app (users, roles, keys, logins), then the
 * schema is taken back to the version before (the Organizations migration's
 * `down`, its row removed from `sluice_migrations`) and the sessions in Redis
 * rewritten as that version wrote them (no `hidePayloads`); the new app then
 * starts over it and migrates.
 */
const ROOT = 'sk_' + randomBytes(32).toString('base64url');
const PW = 'a long enough password';
let db: TestDb;
let prefix: string;
let app: TestApi | null = null;
const env = () => ({ AUTH: 'on', SLUICE_BOOTSTRAP_ADMIN_KEY: ROOT, ROLE: 'api', DATABASE_URL: db.url, REDIS_PREFIX: prefix });
const root = (r: any) => r.set('authorization', `Bearer ${ROOT}`);
const cookie = (token: string) => (r: any) => r.set('cookie', `sluice_session=${token}`).set('origin', app!.url);

beforeAll(async () => {
  db = await openTestDb('orgsupgrade');
  prefix = testPrefix('orgsupgrade');
});
afterAll(async () => {
  await app?.close();
  const r = createRedis({ redisUrl: REDIS_URL, redisClusterNodes: null });
  await deleteByPrefix(r as Redis, prefix);
  r.disconnect();
  await db.close();
});

async function login(username: string, project?: string): Promise<{ status: number; token: string | null; body: any }> {
  const r = await app!.http.post('/auth/login').send({ username, password: PW, ...(project ? { project } : {}) });
  const c = ([] as string[]).concat(r.headers['set-cookie'] ?? []).find((x) => x.startsWith('sluice_session='));
  return { status: r.status, token: c ? c.slice('sluice_session='.length).split(';')[0] : null, body: r.body };
}

test('users, roles, keys and sessions of the version before organizations keep their meaning after the upgrade', async () => {
  // 1. The installation as it was: users with roles in two projects, a disabled one, a key, live sessions.
  app = await startTestApi('orgsupgrade-old', env());
  const h = app.http;
  expect((await root(h.post('/projects')).send({ name: 'shop' })).status).toBe(201);
  const users: Record<string, string> = {};
  const make = async (username: string, project: string, role: string) => {
    const r = await root(h.post('/users')).set('x-sluice-project', project).send({ username, password: PW, role });
    expect(r.status).toBe(201);
    users[username] = r.body.id;
  };
  await make('alice', 'default', 'admin');
  await make('bob', 'default', 'viewer');
  await make('carol', 'shop', 'operator');
  await make('dave', 'default', 'operator');
  // carol also has a role in default (a user is global; roles are per project).
  await db.dataSource.query(`INSERT INTO user_roles (user_id, project, role) VALUES ($1, 'default', 'viewer')`, [users.carol]);
  expect((await root(h.patch(`/users/${users.dave}`)).send({ disabled: true })).status).toBe(200);
  const key = await root(h.post('/keys')).set('x-sluice-project', 'shop').send({ name: 'shop-producer', role: 'producer' });
  expect(key.status).toBe(201);
  const sessions = { alice: await login('alice'), carolShop: await login('carol', 'shop'), bob: await login('bob') };
  for (const s of Object.values(sessions)) expect(s.status).toBe(200);
  await app.close();
  app = null;

  // 2. Back to the schema of the version before, and its session records.
  const qr = db.dataSource.createQueryRunner();
  try {
    await new Organizations1796002200000().down(qr);
  } finally {
    await qr.release();
  }
  await db.dataSource.query(`DELETE FROM sluice_migrations WHERE name = 'Organizations1796002200000'`);
  const tables: { t: string }[] = await db.dataSource.query(`SELECT table_name AS t FROM information_schema.tables WHERE table_name IN ('orgs', 'org_members', 'org_invitations')`);
  expect(tables).toEqual([]);
  const redis = createRedis({ redisUrl: REDIS_URL, redisClusterNodes: null });
  try {
    for (const s of Object.values(sessions)) {
      const k = `${prefix}:auth:session:${hashSecret(s.token!)}`;
      const rec = JSON.parse((await redis.get(k)) as string);
      delete rec.hidePayloads;
      await redis.set(k, JSON.stringify(rec), 'KEEPTTL');
    }
  } finally {
    redis.disconnect();
  }

  // 3. The new version migrates and keeps every meaning.
  app = await startTestApi('orgsupgrade-new', env());
  const n = app.http;
  expect(await db.dataSource.query(`SELECT name FROM sluice_migrations WHERE name = 'Organizations1796002200000'`)).toHaveLength(1);
  // The old sessions: same project, same role, still working.
  const s1 = (await cookie(sessions.alice.token!)(n.get('/auth/session'))).body;
  expect(s1).toMatchObject({ kind: 'user', project: 'default', role: 'admin', org: 'default', hidePayloads: false });
  expect((await cookie(sessions.alice.token!)(n.post('/queues/upg/pause'))).status).toBe(200);
  expect((await cookie(sessions.carolShop.token!)(n.get('/auth/session'))).body).toMatchObject({ project: 'shop', role: 'operator' });
  expect((await cookie(sessions.bob.token!)(n.post('/queues/upg/resume'))).status).toBe(403);
  expect((await cookie(sessions.bob.token!)(n.get('/queues'))).status).toBe(200);
  // Every login with its password, every role as it was; the disabled user stays out.
  expect((await login('alice')).body).toMatchObject({ project: 'default', role: 'admin' });
  expect((await login('bob')).body).toMatchObject({ project: 'default', role: 'viewer' });
  expect((await login('carol')).body).toMatchObject({ project: 'default', role: 'viewer' });
  expect((await login('carol', 'shop')).body).toMatchObject({ project: 'shop', role: 'operator' });
  expect((await login('dave')).status).toBe(401);
  const carol = await login('carol');
  expect((await cookie(carol.token!)(n.get('/auth/session'))).body.projects).toEqual([
    { name: 'default', org: 'default', role: 'viewer' },
    { name: 'shop', org: 'default', role: 'operator' },
  ]);
  // They are members of `default` with exactly those project roles; the projects are `default`'s.
  const members = (await root(n.get('/orgs/default/members'))).body as { username: string; orgRole: string; projects: Record<string, string> }[];
  expect(members.map((m) => [m.username, m.orgRole, m.projects]).sort()).toEqual([
    ['alice', 'member', { default: 'admin' }],
    ['bob', 'member', { default: 'viewer' }],
    ['carol', 'member', { default: 'viewer', shop: 'operator' }],
    ['dave', 'member', { default: 'operator' }],
  ]);
  expect((await root(n.get('/projects'))).body.map((p: { name: string; org: string }) => [p.name, p.org])).toEqual([
    ['default', 'default'],
    ['shop', 'default'],
  ]);
  expect((await root(n.get('/orgs'))).body.map((o: { name: string }) => o.name)).toEqual(['default']);
  // /users as before.
  expect((await root(n.get('/users'))).body.map((u: { username: string; role: string }) => `${u.username}:${u.role}`)).toEqual(['alice:admin', 'bob:viewer', 'carol:viewer', 'dave:operator']);
  // The key works as before, in its project.
  expect((await n.post('/jobs').set('authorization', `Bearer ${key.body.secret}`).send({ queue: 'upg', type: 'diag.echo' })).status).toBe(201);
  expect((await root(n.get('/queues/upg')).set('x-sluice-project', 'shop')).body.counts.waiting).toBe(1);
}, 120_000);
