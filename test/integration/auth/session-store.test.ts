import type Redis from 'ioredis';
import { hashSecret } from '../../../src/core/api-key';
import { MAX_SESSIONS_PER_USER, SESSION_CACHE_MS, SessionStore } from '../../../src/auth/session-store';
import { LoginLimiter, LoginRateLimitedError } from '../../../src/auth/login-limiter';
import { createRedis, type RedisClient } from '../../../src/redis/connection';
import { RedisLoginAttempts } from '../../../src/redis/stores/login-attempts';
import { RedisSessionRecords } from '../../../src/redis/stores/session-records';
import { deleteByPrefix, REDIS_URL, sleep, testPrefix } from '../../support/redis';

/** The session store and the login limiter on real Redis, below the HTTP layer. */
let redis: RedisClient;
const prefix = testPrefix('sessionstore');
beforeAll(() => {
  redis = createRedis({ redisUrl: REDIS_URL, redisClusterNodes: null });
});
afterAll(async () => {
  await deleteByPrefix(redis as Redis, prefix);
  redis.disconnect();
});

const user = (id: string) => ({ userId: id, username: id, project: 'default', role: 'viewer' as const });

test(`a user holds at most ${MAX_SESSIONS_PER_USER} live sessions: a login beyond ends the oldest; ended ones leave the user's set`, async () => {
  const store = new SessionStore(new RedisSessionRecords(redis, prefix), 60_000, 600_000);
  const tokens: string[] = [];
  for (let i = 0; i < MAX_SESSIONS_PER_USER + 2; i++) {
    tokens.push((await store.create(user('many'))).token);
    await sleep(2); // distinct createdAt (ms): "oldest" among sessions of one millisecond is any of them
  }
  const fresh = new SessionStore(new RedisSessionRecords(redis, prefix), 60_000, 600_000); // no cache
  expect(await fresh.authenticate(tokens[0])).toBeNull();
  expect(await fresh.authenticate(tokens[1])).toBeNull();
  for (const t of tokens.slice(2)) expect(await fresh.authenticate(t)).not.toBeNull();
  expect(await redis.scard(`${prefix}:auth:user-sessions:many`)).toBe(MAX_SESSIONS_PER_USER);
  expect(await store.revokeUser('many')).toBe(MAX_SESSIONS_PER_USER);
  expect(await redis.scard(`${prefix}:auth:user-sessions:many`)).toBe(0);
});

test('a refresh never brings back a session another replica revoked meanwhile (SET XX)', async () => {
  const here = new SessionStore(new RedisSessionRecords(redis, prefix), 2000, 600_000); // refresh due 500 ms after the last
  const s = await here.create(user('racer'));
  expect(await here.authenticate(s.token)).not.toBeNull(); // cached here now
  await sleep(600);
  expect(await new SessionStore(new RedisSessionRecords(redis, prefix), 2000, 600_000).revokeUser('racer')).toBe(1);
  // Still served from this replica's cache (≤ 1 s), and its refresh is due: it must not write the session back.
  expect(here.authenticate(s.token)).not.toBeNull();
  await sleep(100);
  expect(await redis.exists(`${prefix}:auth:session:${hashSecret(s.token)}`)).toBe(0);
  await sleep(SESSION_CACHE_MS);
  expect(await here.authenticate(s.token)).toBeNull();
});

test('the login limit: the 6th attempt within the window is refused with the window\'s remaining time; a success does not count against the address', async () => {
  const limiter = new LoginLimiter(new RedisLoginAttempts(redis, prefix), 5, 2000);
  for (let i = 0; i < 5; i++) await limiter.begin('ana', '192.0.2.1');
  const e = await limiter.begin('ana', '192.0.2.2').catch((x: unknown) => x);
  expect(e).toBeInstanceOf(LoginRateLimitedError);
  expect((e as LoginRateLimitedError).retryAfterMs).toBeGreaterThan(1000);
  expect((e as LoginRateLimitedError).retryAfterMs).toBeLessThanOrEqual(2000);
  await sleep(2100);
  await limiter.begin('ana', '192.0.2.1'); // the window has passed
  for (let i = 0; i < 10; i++) await (await limiter.begin(`ok${i}`, '192.0.2.9')).succeeded();
  await limiter.begin('bob', '192.0.2.9'); // ten successes from that address counted nothing
  const ttl = await redis.pttl(`${prefix}:auth:login-fail:a:192.0.2.9`);
  expect(ttl).toBeGreaterThan(0); // every counter expires
  // A success after its window ended leaves no counter behind (a DECR would make one without expiry).
  const quick = new LoginLimiter(new RedisLoginAttempts(redis, prefix), 5, 100);
  const attempt = await quick.begin('late', '192.0.2.77');
  await sleep(150);
  await attempt.succeeded();
  expect(await redis.pttl(`${prefix}:auth:login-fail:a:192.0.2.77`)).toBe(-2);
});
