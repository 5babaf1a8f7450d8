import { randomBytes } from 'node:crypto';
import { hashSecret } from '../../src/core/api-key';
import { createRedis } from '../../src/redis/connection';
import { REDIS_URL, sleep } from '../support/redis';
import { startTestApi, type TestApi } from '../support/http';

/**
 * Session expiry with small values (SESSION_IDLE_MS=2000, SESSION_MAX_MS=5000):
 * idle expiry, activity keeping a session alive without a write per
 * request, the absolute expiry that activity cannot pass, and TRUST_PROXY
 * off by default (X-Forwarded-Proto not believed: no Secure).
 */
const BOOTSTRAP = 'sk_' + randomBytes(32).toString('base64url');
const IDLE = 2000;
const MAX = 5000;
let api: TestApi;
let user: { username: string; password: string };

beforeAll(async () => {
  api = await startTestApi('authsessions', { AUTH: 'on', SLUICE_BOOTSTRAP_ADMIN_KEY: BOOTSTRAP, SESSION_IDLE_MS: String(IDLE), SESSION_MAX_MS: String(MAX) });
  user = { username: 'sess-user', password: 'a long enough password' };
  const r = await api.http.post('/users').set('authorization', `Bearer ${BOOTSTRAP}`).send({ ...user, role: 'viewer' });
  expect(r.status).toBe(201);
});
afterAll(() => api?.close());

async function login(headers: Record<string, string> = {}): Promise<{ token: string; cookie: string; at: number }> {
  const at = Date.now();
  const r = await api.http.post('/auth/login').set(headers).send(user);
  expect(r.status).toBe(200);
  const cookie = ([] as string[]).concat(r.headers['set-cookie']).find((c) => c.startsWith('sluice_session='))!;
  return { token: cookie.slice('sluice_session='.length).split(';')[0], cookie, at };
}

const get = (token: string) => api.http.get('/queues').set('cookie', `sluice_session=${token}`);

test('idle expiry: a session unused for SESSION_IDLE_MS is refused, and Redis has dropped it', async () => {
  const { token } = await login();
  expect((await get(token)).status).toBe(200);
  await sleep(IDLE + 300);
  expect((await get(token)).status).toBe(401);
  const redis = createRedis({ redisUrl: REDIS_URL, redisClusterNodes: null });
  try {
    expect(await redis.exists(`${api.prefix}:auth:session:${hashSecret(token)}`)).toBe(0);
  } finally {
    redis.disconnect();
  }
});

test('activity keeps a session past the idle time, refreshing its expiry at most every idle/4 (not per request), until the absolute expiry', async () => {
  const { token, at } = await login();
  const key = `${api.prefix}:auth:session:${hashSecret(token)}`;
  const redis = createRedis({ redisUrl: REDIS_URL, redisClusterNodes: null });
  try {
    const writes = new Set<number>();
    // Requests every 100 ms for 4 s: twice the idle time, within the absolute expiry.
    while (Date.now() - at < MAX - 1000) {
      expect((await get(token)).status).toBe(200);
      const raw = await redis.get(key);
      writes.add(JSON.parse(raw as string).lastSeenAt);
      await sleep(100);
    }
    // ~40 requests, one refresh per IDLE/4 = 500 ms at most: about 8 writes, far fewer than requests.
    expect(writes.size).toBeGreaterThan(2);
    expect(writes.size).toBeLessThanOrEqual(Math.ceil((MAX - 1000) / (IDLE / 4)) + 1);
    const sessionTtl = await redis.pttl(key);
    expect(sessionTtl).toBeLessThanOrEqual(IDLE);
    // Keep it busy past the absolute expiry (createdAt is the server's clock, the same as ours):
    // every request that ends before createdAt + SESSION_MAX_MS passes, every one sent after is refused.
    const createdAt = JSON.parse((await redis.get(key)) as string).createdAt as number;
    const seen: { start: number; end: number; status: number }[] = [];
    while (Date.now() < createdAt + MAX + 600) {
      const start = Date.now();
      const status = (await get(token)).status;
      seen.push({ start, end: Date.now(), status });
      await sleep(50);
    }
    expect(seen.filter((x) => x.end < createdAt + MAX && x.status !== 200)).toEqual([]);
    expect(seen.filter((x) => x.start >= createdAt + MAX && x.status !== 401)).toEqual([]);
    expect(seen.filter((x) => x.start >= createdAt + MAX).length).toBeGreaterThan(3);
  } finally {
    redis.disconnect();
  }
});

test("the login answer's expiresAt is the idle expiry, the cookie's Max-Age the absolute one", async () => {
  const r = await api.http.post('/auth/login').send(user);
  expect(r.status).toBe(200);
  const cookie = ([] as string[]).concat(r.headers['set-cookie']).find((c) => c.startsWith('sluice_session='))!;
  expect(cookie).toContain(`Max-Age=${MAX / 1000}`);
  const left = Date.parse(r.body.expiresAt) - Date.now();
  expect(left).toBeLessThanOrEqual(IDLE);
  expect(left).toBeGreaterThan(IDLE - 1000);
});

test('TRUST_PROXY off (default): X-Forwarded-Proto and X-Forwarded-For are not believed', async () => {
  const { cookie } = await login({ 'x-forwarded-proto': 'https' });
  expect(cookie.split(';').map((s) => s.trim())).not.toContain('Secure');
  // Five failures "from" five forged addresses still count against the one real address.
  for (let i = 0; i < 5; i++) {
    const r = await api.http.post('/auth/login').set('x-forwarded-for', `203.0.113.${i}`).send({ username: `ghost${i}`, password: 'wrong password!' });
    expect(r.status).toBe(401);
  }
  expect((await api.http.post('/auth/login').set('x-forwarded-for', '203.0.113.99').send(user)).status).toBe(429);
});
