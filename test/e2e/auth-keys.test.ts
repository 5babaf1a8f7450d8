import { randomBytes } from 'node:crypto';
import { hashSecret } from '../../src/core/api-key';
import { KEY_CACHE_MS } from '../../src/auth/key-store';
import { createRedis } from '../../src/redis/connection';
import { REDIS_URL, sleep } from '../support/redis';
import { startTestApi, validatorFor, type TestApi } from '../support/http';
import { validatingAgent } from '../support/openapi-validator';
import { AppModule } from '../../src/app.module';
import { createHttpApp } from '../../src/server/http-app';
import { createLogger } from '../../src/logging/logger';
import { loadConfig } from '../../src/config/config';
import request from 'supertest';

/** API keys on real Redis and PostgreSQL: lifecycle, bootstrap, restore, secrets at rest. */
const BOOTSTRAP = 'sk_' + randomBytes(32).toString('base64url');
let api: TestApi;
const admin = () => `Bearer ${BOOTSTRAP}`;

beforeAll(async () => {
  api = await startTestApi('authkeys', { AUTH: 'on', SLUICE_BOOTSTRAP_ADMIN_KEY: BOOTSTRAP });
});
afterAll(() => api?.close());

/** A second api replica on the same Redis prefix and database. */
async function replica() {
  const config = loadConfig({ REDIS_URL, DATABASE_URL: api.db.url, REDIS_PREFIX: api.prefix, ROLE: 'api', LOG_LEVEL: 'silent', AUTH: 'on', SLUICE_BOOTSTRAP_ADMIN_KEY: BOOTSTRAP });
  const log = createLogger(config.logLevel);
  const app = await createHttpApp(AppModule.forRoles(config, log), config, log);
  await app.listen(0, '127.0.0.1');
  const port = (app.getHttpServer().address() as { port: number }).port;
  return { app, http: validatingAgent(request(`http://127.0.0.1:${port}`), () => validatorFor(app)) };
}

test('create: 201 with the secret once; GET /keys lists it without any secret; the key works for its role', async () => {
  const c = await api.http.post('/keys').set('authorization', admin()).send({ name: 'billing', role: 'producer' });
  expect(c.status).toBe(201);
  expect(c.body).toMatchObject({ name: 'billing', role: 'producer', project: 'default', expiresAt: null });
  expect(c.body.secret).toMatch(/^sk_[A-Za-z0-9_-]{43}$/);
  const list = await api.http.get('/keys').set('authorization', admin());
  expect(list.status).toBe(200);
  const mine = list.body.find((k: { id: string }) => k.id === c.body.id);
  expect(mine).toMatchObject({ name: 'billing', role: 'producer' });
  expect(JSON.stringify(list.body)).not.toContain(c.body.secret);
  expect(JSON.stringify(list.body)).not.toContain(hashSecret(c.body.secret));
  const job = await api.http.post('/jobs').set('authorization', `Bearer ${c.body.secret}`).send({ type: 'diag.echo', payload: { a: 1 } });
  expect(job.status).toBe(201);
  expect((await api.http.post('/queues/default/pause').set('authorization', `Bearer ${c.body.secret}`)).status).toBe(403);
});

test('at rest: Redis and PostgreSQL hold only the SHA-256 of the secret', async () => {
  const c = await api.http.post('/keys').set('authorization', admin()).send({ name: 'at-rest', role: 'viewer' });
  const redis = createRedis({ redisUrl: REDIS_URL, redisClusterNodes: null });
  try {
    const dump = JSON.stringify([await redis.hgetall(`${api.prefix}:auth:keys`), await redis.hgetall(`${api.prefix}:auth:keyids`)]);
    expect(dump).not.toContain(c.body.secret);
    expect(dump).toContain(hashSecret(c.body.secret));
  } finally {
    redis.disconnect();
  }
  const rows = await api.db.dataSource.query(`SELECT * FROM api_keys WHERE id = $1`, [c.body.id]);
  expect(JSON.stringify(rows)).not.toContain(c.body.secret);
  expect(rows[0].secret_sha256).toBe(hashSecret(c.body.secret));
});

test('revoke: refused at once on this replica and within a second on another; 404 for an unknown id', async () => {
  const other = await replica();
  try {
    const c = await api.http.post('/keys').set('authorization', admin()).send({ name: 'to-revoke', role: 'viewer' });
    const key = `Bearer ${c.body.secret}`;
    expect((await api.http.get('/queues').set('authorization', key)).status).toBe(200);
    expect((await other.http.get('/queues').set('authorization', key)).status).toBe(200); // cached there now
    const d = await api.http.delete(`/keys/${c.body.id}`).set('authorization', admin());
    expect(d.status).toBe(200);
    expect((await api.http.get('/queues').set('authorization', key)).status).toBe(401);
    const t0 = Date.now();
    let status = 200;
    while (status === 200 && Date.now() - t0 < 3000) {
      status = (await other.http.get('/queues').set('authorization', key)).status;
      if (status === 200) await sleep(50);
    }
    expect(status).toBe(401);
    expect(Date.now() - t0).toBeLessThanOrEqual(KEY_CACHE_MS + 300);
    expect((await api.http.delete(`/keys/${c.body.id}`).set('authorization', admin())).status).toBe(404);
    expect((await api.http.delete('/keys/not-a-uuid').set('authorization', admin())).status).toBe(404);
    const rows = await api.db.dataSource.query(`SELECT revoked_at FROM api_keys WHERE id = $1`, [c.body.id]);
    expect(rows[0].revoked_at).not.toBeNull();
  } finally {
    await other.app.close();
  }
});

test('expiry: a key is refused once its expiresAt has passed; a past or too distant expiresAt is a 400', async () => {
  const c = await api.http.post('/keys').set('authorization', admin()).send({ name: 'short', role: 'viewer', expiresAt: new Date(Date.now() + 1500).toISOString() });
  expect(c.status).toBe(201);
  expect((await api.http.get('/queues').set('authorization', `Bearer ${c.body.secret}`)).status).toBe(200);
  await sleep(1600);
  expect((await api.http.get('/queues').set('authorization', `Bearer ${c.body.secret}`)).status).toBe(401);
  for (const expiresAt of [new Date(Date.now() - 1000).toISOString(), '9999-01-01T00:00:00.000Z', 'tomorrow']) {
    const r = await api.http.post('/keys').set('authorization', admin()).send({ name: 'bad', role: 'viewer', expiresAt });
    expect(r.status).toBe(400);
    expect(r.body.error.details[0].path).toBe('expiresAt');
  }
  for (const body of [{ name: 'x', role: 'root' }, { name: '', role: 'viewer' }, { role: 'viewer' }, { name: 'a\u0000b', role: 'viewer' }, { name: 'x', role: 'viewer', project: 'other' }]) {
    expect((await api.http.post('/keys').set('authorization', admin()).send(body)).status).toBe(400);
  }
});

test('Redis loses the keys: a restart restores them from PostgreSQL; revoked ones stay revoked', async () => {
  const live = await api.http.post('/keys').set('authorization', admin()).send({ name: 'survivor', role: 'viewer' });
  const gone = await api.http.post('/keys').set('authorization', admin()).send({ name: 'revoked', role: 'viewer' });
  await api.http.delete(`/keys/${gone.body.id}`).set('authorization', admin());
  const redis = createRedis({ redisUrl: REDIS_URL, redisClusterNodes: null });
  await redis.del(`${api.prefix}:auth:keys`, `${api.prefix}:auth:keyids`);
  redis.disconnect();
  const other = await replica();
  try {
    expect((await other.http.get('/queues').set('authorization', `Bearer ${live.body.secret}`)).status).toBe(200);
    expect((await other.http.get('/queues').set('authorization', `Bearer ${gone.body.secret}`)).status).toBe(401);
    expect((await other.http.get('/queues').set('authorization', admin())).status).toBe(200);
  } finally {
    await other.app.close();
  }
});

test('last use is recorded without a write per request', async () => {
  const c = await api.http.post('/keys').set('authorization', admin()).send({ name: 'used', role: 'admin' });
  for (let i = 0; i < 5; i++) await api.http.get('/queues').set('authorization', `Bearer ${c.body.secret}`);
  const list = await api.http.get('/keys').set('authorization', `Bearer ${c.body.secret}`);
  const k = list.body.find((x: { id: string }) => x.id === c.body.id);
  expect(Date.now() - Date.parse(k.lastUsedAt)).toBeLessThan(10_000);
  const redis = createRedis({ redisUrl: REDIS_URL, redisClusterNodes: null });
  try {
    // Not flushed yet (every 5 s): nothing was written to Redis per request.
    expect(await redis.hget(`${api.prefix}:auth:lastused`, c.body.id)).toBeNull();
  } finally {
    redis.disconnect();
  }
});

test('a key stored before keys had their own limit (no rateLimit in its record) is listed and revoked with rateLimit null', async () => {
  const c = await api.http.post('/keys').set('authorization', admin()).send({ name: 'older', role: 'viewer' });
  const redis = createRedis({ redisUrl: REDIS_URL, redisClusterNodes: null });
  try {
    const hash = hashSecret(c.body.secret);
    const { rateLimit, ...older } = JSON.parse((await redis.hget(`${api.prefix}:auth:keys`, hash)) as string) as Record<string, unknown>;
    expect(rateLimit).toBeNull();
    await redis.hset(`${api.prefix}:auth:keys`, hash, JSON.stringify(older));
  } finally {
    redis.disconnect();
  }
  // Validated against the document too (KeyView: rateLimit is required, null = the defaults).
  const list = await api.http.get('/keys').set('authorization', admin());
  expect(list.status).toBe(200);
  expect(list.body.find((k: { id: string }) => k.id === c.body.id)).toMatchObject({ id: c.body.id, rateLimit: null });
  const revoked = await api.http.delete(`/keys/${c.body.id}`).set('authorization', admin());
  expect(revoked.status).toBe(200);
  expect(revoked.body).toMatchObject({ id: c.body.id, revoked: true, rateLimit: null });
});

test('a revoked bootstrap key is not brought back by a restart', async () => {
  const list = await api.http.get('/keys').set('authorization', admin());
  const boot = list.body.find((k: { name: string; root: boolean }) => k.root && k.name === 'bootstrap');
  expect(boot).toBeDefined();
  // A project admin may not revoke it (root keys are root's: API.md v1.2); root revokes it, then the server restarts with the same env.
  const adm = await api.http.post('/keys').set('authorization', admin()).send({ name: 'second-admin', role: 'admin' });
  expect((await api.http.delete(`/keys/${boot.id}`).set('authorization', `Bearer ${adm.body.secret}`)).status).toBe(404);
  expect((await api.http.delete(`/keys/${boot.id}`).set('authorization', admin())).status).toBe(200);
  const other = await replica();
  try {
    expect((await other.http.get('/queues').set('authorization', admin())).status).toBe(401);
  } finally {
    await other.app.close();
  }
});
