import { randomBytes } from 'node:crypto';
import { Writable } from 'node:stream';
import pino from 'pino';
import request from 'supertest';
import { AppModule } from '../../src/app.module';
import { hashSecret } from '../../src/core/api-key';
import { loadConfig } from '../../src/config/config';
import { createHttpApp } from '../../src/server/http-app';
import { createRedis } from '../../src/redis/connection';
import { SESSION_CACHE_MS } from '../../src/auth/session-store';
import { validatorFor } from '../support/http';
import { validatingAgent } from '../support/openapi-validator';
import { openTestDb, type TestDb } from '../support/postgres';
import { deleteByPrefix, REDIS_URL, sleep, testPrefix } from '../support/redis';
import type Redis from 'ioredis';

/**
 * Dashboard users and sessions (issue "Security") on real Redis and
 * PostgreSQL: user CRUD and roles, login and its limit, the session cookie,
 * rotation, logout, revocation, and no password or token in any answer or
 * log line. The app logs at debug level into `logged`; the last test greps it.
 * TRUST_PROXY=127.0.0.1: the tests choose their client address with
 * X-Forwarded-For (each test its own, so the per-address limit of one test
 * does not reach the next).
 */
const BOOTSTRAP = 'sk_' + randomBytes(32).toString('base64url');
const admin = `Bearer ${BOOTSTRAP}`;
let logged = '';
let db: TestDb;
let prefix: string;
let app: Awaited<ReturnType<typeof createHttpApp>>;
let http: ReturnType<typeof request>;
let origin: string;
/** Every password and token the tests used: none may appear in the log. */
const secrets = new Set<string>();
let addrSeq = 1;
/** A client address of its own (X-Forwarded-For). */
const freshAddr = () => `198.51.100.${addrSeq++}`;

function env(extra: Record<string, string> = {}) {
  return loadConfig({ REDIS_URL, DATABASE_URL: db.url, REDIS_PREFIX: prefix, ROLE: 'api', LOG_LEVEL: 'debug', PORT: '0', AUTH: 'on', SLUICE_BOOTSTRAP_ADMIN_KEY: BOOTSTRAP, TRUST_PROXY: '127.0.0.1', ...extra });
}

async function start(extra: Record<string, string> = {}) {
  const config = env(extra);
  const sink = new Writable({
    write(chunk, _enc, done) {
      logged += chunk.toString();
      done();
    },
  });
  const log = pino({ level: 'debug' }, sink);
  const a = await createHttpApp(AppModule.forRoles(config, log), config, log);
  await a.listen(0, '127.0.0.1');
  const port = (a.getHttpServer().address() as { port: number }).port;
  // Every answer is checked against the OpenAPI document, as startTestApi does (test/support/http.ts).
  return { app: a, http: validatingAgent(request(`http://127.0.0.1:${port}`), () => validatorFor(a)), origin: `http://127.0.0.1:${port}` };
}

beforeAll(async () => {
  db = await openTestDb('authusers');
  prefix = testPrefix('authusers');
  ({ app, http, origin } = await start());
});
afterAll(async () => {
  await app?.close();
  const r = createRedis({ redisUrl: REDIS_URL, redisClusterNodes: null });
  await deleteByPrefix(r as Redis, prefix);
  r.disconnect();
  await db?.close();
});

function password(): string {
  const p = 'pw-' + randomBytes(12).toString('base64url');
  secrets.add(p);
  return p;
}

async function createUser(role: string, username = `u${randomBytes(4).toString('hex')}`) {
  const pw = password();
  const r = await http.post('/users').set('authorization', admin).send({ username, password: pw, role });
  expect(r.status).toBe(201);
  return { id: r.body.id as string, username, password: pw };
}

/** The session token of a response's Set-Cookie, and the whole header. */
function cookieOf(res: request.Response): { token: string; header: string } {
  const raw = ([] as string[]).concat(res.headers['set-cookie'] ?? []).find((c) => c.startsWith('sluice_session='));
  if (!raw) throw new Error(`no session cookie (status ${res.status})`);
  const token = raw.slice('sluice_session='.length).split(';')[0];
  secrets.add(token);
  return { token, header: raw };
}

async function login(username: string, pw: string, opts: { addr?: string; cookie?: string } = {}) {
  let r = http.post('/auth/login').set('x-forwarded-for', opts.addr ?? freshAddr());
  if (opts.cookie) r = r.set('cookie', `sluice_session=${opts.cookie}`);
  return r.send({ username, password: pw });
}

async function session(username: string, pw: string): Promise<string> {
  const r = await login(username, pw);
  expect(r.status).toBe(200);
  return cookieOf(r).token;
}

const withSession = (token: string) => `sluice_session=${token}`;

test('users CRUD: create (201, no hash), list with role, change role, remove; usernames unique without case; bad bodies 400, unknown ids 404', async () => {
  const pw = password();
  const c = await http.post('/users').set('authorization', admin).send({ username: 'Ana@Example.com', password: pw, role: 'viewer' });
  expect(c.status).toBe(201);
  expect(c.body).toEqual({ id: expect.any(String), username: 'Ana@Example.com', project: 'default', role: 'viewer', createdAt: expect.any(String), disabledAt: null });
  const dup = await http.post('/users').set('authorization', admin).send({ username: 'ana@example.COM', password: password(), role: 'admin' });
  expect(dup.status).toBe(409);
  expect(dup.body.error.code).toBe('conflict');

  const list = await http.get('/users').set('authorization', admin);
  expect(list.status).toBe(200);
  expect(list.body.find((u: { id: string }) => u.id === c.body.id)).toMatchObject({ username: 'Ana@Example.com', role: 'viewer' });
  expect(JSON.stringify(list.body)).not.toMatch(/argon2|password/i);

  const p = await http.patch(`/users/${c.body.id}`).set('authorization', admin).send({ role: 'operator' });
  expect(p.status).toBe(200);
  expect(p.body.role).toBe('operator');
  const d = await http.delete(`/users/${c.body.id}`).set('authorization', admin);
  expect(d.status).toBe(200);
  expect(d.body).toMatchObject({ id: c.body.id, deleted: true });
  expect((await http.get('/users').set('authorization', admin)).body.find((u: { id: string }) => u.id === c.body.id)).toBeUndefined();
  expect(await db.dataSource.query(`SELECT 1 FROM users WHERE id = $1`, [c.body.id])).toEqual([]);

  for (const id of [c.body.id, 'not-a-uuid']) {
    expect((await http.patch(`/users/${id}`).set('authorization', admin).send({ role: 'viewer' })).status).toBe(404);
    expect((await http.delete(`/users/${id}`).set('authorization', admin)).status).toBe(404);
  }
  const bad: [Record<string, unknown>, string][] = [
    [{ username: 'short-pw', password: 'elevenchars', role: 'viewer' }, 'password'],
    [{ username: 'long-pw', password: 'é'.repeat(513), role: 'viewer' }, 'password'], // 1026 bytes, 513 characters
    [{ username: 'x y', password: password(), role: 'viewer' }, 'username'],
    [{ username: 'nobody', password: password(), role: 'root' }, 'role'],
    [{ username: 'nobody', password: password(), role: 'viewer', project: 'other' }, 'project'],
  ];
  for (const [body, path] of bad) {
    const r = await http.post('/users').set('authorization', admin).send(body);
    expect(r.status).toBe(400);
    expect(r.body.error.details.map((x: { path: string }) => x.path)).toContain(path);
  }
  // Twelve characters, one of them an emoji (two UTF-16 units), is enough; no composition rule.
  const emoji = await http.post('/users').set('authorization', admin).send({ username: 'emoji', password: 'aaaaaaaaaaa😀', role: 'viewer' });
  expect(emoji.status).toBe(201);
  const none = await http.patch(`/users/${emoji.body.id}`).set('authorization', admin).send({});
  expect(none.status).toBe(400);
  expect((await http.patch(`/users/${emoji.body.id}`).set('authorization', admin).send({ password: 'too-short' })).status).toBe(400);
});

test('at rest: the password is an argon2id PHC string (m=19456, t=2, p=1), never the password', async () => {
  const u = await createUser('viewer');
  const rows = await db.dataSource.query(`SELECT * FROM users WHERE id = $1`, [u.id]);
  expect(rows[0].password_hash).toMatch(/^\$argon2id\$v=19\$m=19456,t=2,p=1\$[A-Za-z0-9+/]{22}\$[A-Za-z0-9+/]{43}$/);
  expect(JSON.stringify(rows)).not.toContain(u.password);
});

test('login: 200 with the user, project, role and expiry; the cookie is HttpOnly, SameSite=Strict, Path=/, not Secure over plain HTTP; Redis holds only its hash', async () => {
  const u = await createUser('operator');
  const r = await login(u.username.toUpperCase(), u.password);
  expect(r.status).toBe(200);
  expect(r.body).toEqual({ user: { id: u.id, username: u.username }, project: 'default', role: 'operator', expiresAt: expect.any(String) });
  const left = Date.parse(r.body.expiresAt) - Date.now();
  expect(left).toBeGreaterThan(29 * 60_000);
  expect(left).toBeLessThanOrEqual(30 * 60_000);
  const { token, header } = cookieOf(r);
  expect(token).toMatch(/^[A-Za-z0-9_-]{43}$/);
  const attrs = header.split(';').map((s) => s.trim());
  expect(attrs).toEqual(expect.arrayContaining(['HttpOnly', 'SameSite=Strict', 'Path=/', 'Max-Age=43200']));
  expect(attrs).not.toContain('Secure');
  expect(r.headers['cache-control']).toBe('no-store');

  const redis = createRedis({ redisUrl: REDIS_URL, redisClusterNodes: null });
  try {
    const raw = await redis.get(`${prefix}:auth:session:${hashSecret(token)}`);
    expect(JSON.parse(raw as string)).toMatchObject({ userId: u.id, project: 'default', role: 'operator' });
    const keys = await redis.keys(`${prefix}:auth:*`);
    expect(keys.join(' ')).not.toContain(token);
    for (const k of keys) if ((await redis.type(k)) === 'string') expect(await redis.get(k)).not.toContain(token);
    const ttl = await redis.pttl(`${prefix}:auth:session:${hashSecret(token)}`);
    expect(ttl).toBeGreaterThan(29 * 60_000);
    expect(ttl).toBeLessThanOrEqual(30 * 60_000);
  } finally {
    redis.disconnect();
  }

  const who = await http.get('/auth/session').set('cookie', withSession(token));
  expect(who.status).toBe(200);
  expect(who.body).toMatchObject({ kind: 'user', user: { id: u.id, username: u.username }, project: 'default', role: 'operator' });
  expect((await http.get('/auth/session')).status).toBe(401);
  expect((await http.get('/auth/session').set('cookie', withSession(randomBytes(32).toString('base64url')))).status).toBe(401);
  expect((await http.get('/auth/session').set('cookie', 'sluice_session=garbage')).status).toBe(401);
});

test('behind a trusted TLS proxy (X-Forwarded-Proto: https) the cookie is Secure', async () => {
  const u = await createUser('viewer');
  const r = await http.post('/auth/login').set('x-forwarded-for', freshAddr()).set('x-forwarded-proto', 'https').send({ username: u.username, password: u.password });
  expect(r.status).toBe(200);
  expect(cookieOf(r).header.split(';').map((s) => s.trim())).toContain('Secure');
});

test('roles through the session: a viewer reads but sees no keys or users and may not pause; an admin may', async () => {
  const vu = await createUser('viewer');
  const viewer = await session(vu.username, vu.password);
  expect((await http.get('/queues').set('cookie', withSession(viewer))).status).toBe(200);
  for (const path of ['/keys', '/users']) {
    const r = await http.get(path).set('cookie', withSession(viewer));
    expect(r.status).toBe(403);
    expect(r.body.error.code).toBe('forbidden');
  }
  expect((await http.post('/queues/usersq/pause').set('cookie', withSession(viewer)).set('origin', origin)).status).toBe(403);
  expect((await http.post('/users').set('cookie', withSession(viewer)).set('origin', origin).send({ username: 'sneaky', password: password(), role: 'admin' })).status).toBe(403);

  const a = await createUser('admin');
  const adm = await session(a.username, a.password);
  expect((await http.get('/users').set('cookie', withSession(adm))).status).toBe(200);
  expect((await http.post('/queues/usersq/pause').set('cookie', withSession(adm)).set('origin', origin)).status).toBe(200);
  // An Authorization header wins over the cookie: a bad key is refused even with a good session.
  expect((await http.get('/users').set('cookie', withSession(adm)).set('authorization', 'Bearer sk_nope')).status).toBe(401);
});

test('CSRF defence in depth: a cookie-signed state change needs Origin or Sec-Fetch-Site: same-origin; a foreign Origin is refused', async () => {
  const a = await createUser('admin');
  const adm = await session(a.username, a.password);
  const bare = await http.post('/queues/csrfq/pause').set('cookie', withSession(adm));
  expect(bare.status).toBe(403);
  expect(bare.body.error.message).toMatch(/Origin/);
  expect((await http.get('/queues/csrfq').set('cookie', withSession(adm))).status).toBe(404); // never paused, never created
  expect((await http.post('/queues/csrfq/pause').set('cookie', withSession(adm)).set('sec-fetch-site', 'cross-site')).status).toBe(403);
  expect((await http.post('/queues/csrfq/pause').set('cookie', withSession(adm)).set('origin', 'http://evil.example')).status).toBe(403);
  expect((await http.post('/queues/csrfq/pause').set('cookie', withSession(adm)).set('sec-fetch-site', 'same-origin')).status).toBe(200);
  expect((await http.post('/queues/csrfq/resume').set('cookie', withSession(adm)).set('origin', origin)).status).toBe(200);
  // A key is not a cookie: no Origin needed.
  expect((await http.post('/queues/csrfq/pause').set('authorization', admin)).status).toBe(200);
});

test('a wrong password and an unknown user: the same 401, at a similar cost (the unknown user is checked against a dummy hash)', async () => {
  const u = await createUser('viewer');
  const wrong = await login(u.username, 'not-the-password-at-all');
  const unknown = await login('nobody-' + randomBytes(3).toString('hex'), 'not-the-password-at-all');
  expect(wrong.status).toBe(401);
  expect(unknown.status).toBe(401);
  expect(unknown.body.error.message).toBe(wrong.body.error.message);
  expect(wrong.headers['set-cookie']).toBeUndefined();
  const time = async (name: string) => {
    const t = process.hrtime.bigint();
    await login(name, 'not-the-password-at-all');
    return Number(process.hrtime.bigint() - t) / 1e6;
  };
  const known: number[] = [];
  const none: number[] = [];
  for (let i = 0; i < 4; i++) {
    const k = await createUser('viewer');
    known.push(await time(k.username));
    none.push(await time('nobody-' + randomBytes(3).toString('hex')));
  }
  const median = (xs: number[]) => xs.sort((a, b) => a - b)[Math.floor(xs.length / 2)];
  // An argon2id check costs ~30 ms; answering an unknown user without one would take ~2 ms.
  expect(median(none)).toBeGreaterThan(median(known) * 0.5);
});

test('a disabled user cannot log in (same 401); enabled again it can', async () => {
  const u = await createUser('viewer');
  await http.patch(`/users/${u.id}`).set('authorization', admin).send({ disabled: true });
  const r = await login(u.username, u.password);
  expect(r.status).toBe(401);
  expect(r.body.error.message).toBe('invalid username or password');
  const e = await http.patch(`/users/${u.id}`).set('authorization', admin).send({ disabled: false });
  expect(e.body.disabledAt).toBeNull();
  expect((await login(u.username, u.password)).status).toBe(200);
});

test('lockout per user: 5 failures, then 429 with Retry-After even with the right password and from another address', async () => {
  const u = await createUser('viewer');
  for (let i = 0; i < 5; i++) expect((await login(u.username, 'wrong-password-' + i)).status).toBe(401);
  const r = await login(u.username, u.password);
  expect(r.status).toBe(429);
  expect(r.body.error.code).toBe('rate_limited');
  const retry = Number(r.headers['retry-after']);
  expect(retry).toBeGreaterThan(880);
  expect(retry).toBeLessThanOrEqual(900);
  expect((await login(u.username.toUpperCase(), u.password)).status).toBe(429); // same user, other case
  // Other users are not locked.
  const v = await createUser('viewer');
  expect((await login(v.username, v.password)).status).toBe(200);
});

test('lockout per address: 5 failures from one address on any users, then 429 there; other addresses still log in', async () => {
  const addr = freshAddr();
  for (let i = 0; i < 5; i++) expect((await login(`ghost${i}`, 'wrong-password', { addr })).status).toBe(401);
  const u = await createUser('viewer');
  const r = await login(u.username, u.password, { addr });
  expect(r.status).toBe(429);
  expect(Number(r.headers['retry-after'])).toBeGreaterThan(880);
  expect((await login(u.username, u.password, { addr: freshAddr() })).status).toBe(200);
  // IPv6: one /64 is one address.
  for (let i = 0; i < 5; i++) expect((await login(`ghost6${i}`, 'wrong-password', { addr: `2001:db8:1:2::${i + 1}` })).status).toBe(401);
  expect((await login(u.username, u.password, { addr: '2001:db8:1:2:ffff::9' })).status).toBe(429);
});

test('a success resets the user\'s failures; concurrent guesses never get past the limit', async () => {
  const u = await createUser('viewer');
  for (let i = 0; i < 4; i++) expect((await login(u.username, 'wrong-password')).status).toBe(401);
  expect((await login(u.username, u.password)).status).toBe(200);
  for (let i = 0; i < 4; i++) expect((await login(u.username, 'wrong-password')).status).toBe(401);
  expect((await login(u.username, u.password)).status).toBe(200);

  const w = await createUser('viewer');
  const all = await Promise.all(Array.from({ length: 12 }, () => login(w.username, 'wrong-password')));
  expect(all.filter((r) => r.status === 401).length).toBe(5);
  expect(all.filter((r) => r.status === 429).length).toBe(7);
});

test('rotation: each login makes a new token; the cookie a login came with is ended', async () => {
  const u = await createUser('viewer');
  const first = await session(u.username, u.password);
  const r = await login(u.username, u.password, { cookie: first });
  const second = cookieOf(r).token;
  expect(second).not.toBe(first);
  expect((await http.get('/queues').set('cookie', withSession(first))).status).toBe(401);
  expect((await http.get('/queues').set('cookie', withSession(second))).status).toBe(200);
});

test('logout: the session ends, the cookie is cleared; logging out without a session is harmless', async () => {
  const u = await createUser('viewer');
  const token = await session(u.username, u.password);
  expect((await http.get('/queues').set('cookie', withSession(token))).status).toBe(200);
  const out = await http.post('/auth/logout').set('cookie', withSession(token)).set('origin', origin);
  expect(out.status).toBe(200);
  const cleared = ([] as string[]).concat(out.headers['set-cookie']).find((c) => c.startsWith('sluice_session='))!;
  expect(cleared).toMatch(/^sluice_session=;/);
  expect(cleared).toContain('Max-Age=0');
  expect((await http.get('/queues').set('cookie', withSession(token))).status).toBe(401);
  const redis = createRedis({ redisUrl: REDIS_URL, redisClusterNodes: null });
  try {
    expect(await redis.exists(`${prefix}:auth:session:${hashSecret(token)}`)).toBe(0);
    expect(await redis.smembers(`${prefix}:auth:user-sessions:${u.id}`)).toEqual([]);
  } finally {
    redis.disconnect();
  }
  expect((await http.post('/auth/logout')).status).toBe(200);
});

test('disable, role change, password change, delete: the user\'s sessions end at once here and within a second on another replica', async () => {
  const other = await start();
  try {
    for (const change of [{ disabled: true }, { role: 'operator' }, { password: password() }, null]) {
      const u = await createUser('viewer');
      const tokens = [await session(u.username, u.password), await session(u.username, u.password)];
      for (const t of tokens) expect((await other.http.get('/queues').set('cookie', withSession(t))).status).toBe(200); // cached there now
      const r = change ? await http.patch(`/users/${u.id}`).set('authorization', admin).send(change) : await http.delete(`/users/${u.id}`).set('authorization', admin);
      expect(r.status).toBe(200);
      for (const t of tokens) expect((await http.get('/queues').set('cookie', withSession(t))).status).toBe(401);
      const t0 = Date.now();
      let status = 200;
      while (status === 200 && Date.now() - t0 < 3000) {
        status = (await other.http.get('/queues').set('cookie', withSession(tokens[0]))).status;
        if (status === 200) await sleep(50);
      }
      expect(status).toBe(401);
      expect(Date.now() - t0).toBeLessThanOrEqual(SESSION_CACHE_MS + 300);
    }
  } finally {
    await other.app.close();
  }
});

test('the log of the whole run holds no password, session token, password hash or API key secret', async () => {
  const u = await createUser('admin');
  const token = await session(u.username, u.password);
  await http.patch(`/users/${u.id}`).set('cookie', withSession(token)).set('origin', origin).send({ password: password() });
  await login(u.username, u.password); // the old password, now wrong
  // API keys too: the bootstrap key sent on every admin call, a new key's secret
  // (shown once in a body), that key used, revoked and used again, and a forged one.
  secrets.add(BOOTSTRAP);
  const k = await http.post('/keys').set('authorization', admin).send({ name: 'logged', role: 'viewer' });
  expect(k.status).toBe(201);
  secrets.add(k.body.secret);
  expect((await http.get('/queues').set('authorization', `Bearer ${k.body.secret}`)).status).toBe(200);
  await http.delete(`/keys/${k.body.id}`).set('authorization', admin);
  expect((await http.get('/queues').set('authorization', `Bearer ${k.body.secret}`)).status).toBe(401);
  const forged = 'sk_' + randomBytes(32).toString('base64url');
  secrets.add(forged);
  expect((await http.post('/queues/x/pause').set('authorization', `Bearer ${forged}`)).status).toBe(401);
  expect(logged.length).toBeGreaterThan(1000); // debug lines were written
  expect(logged).toContain('"route":"/auth/login"');
  const found = [...secrets].filter((s) => logged.includes(s));
  expect(found).toEqual([]);
  expect(logged).not.toContain('$argon2');
});
