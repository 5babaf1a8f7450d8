import type Redis from 'ioredis';
import type { FastifyRequest } from 'fastify';
import { LoginLimiter } from '../../../src/auth/login-limiter';
import { LoginService } from '../../../src/auth/login.service';
import type { Principal } from '../../../src/auth/principal';
import { SessionStore } from '../../../src/auth/session-store';
import { MemberStore, type ProjectAccess } from '../../../src/auth/member-store';
import { UserStore } from '../../../src/auth/user-store';
import { UsersService } from '../../../src/auth/users.service';
import { createRedis, type RedisClient } from '../../../src/redis/connection';
import { RedisLoginAttempts } from '../../../src/redis/stores/login-attempts';
import { RedisSessionRecords } from '../../../src/redis/stores/session-records';
import { openTestDb, type TestDb } from '../../support/postgres';
import { deleteByPrefix, REDIS_URL, testPrefix } from '../../support/redis';

/**
 * A login racing with a disable or a role change, on real PostgreSQL and
 * Redis, interleaved deterministically: the login is held right after it
 * read the user and its roles (API.md v1.3: the member's projects), the
 * admin's change commits and revokes (finding no session yet), then the
 * login goes on. It must not leave a live session behind.
 */
class HeldMemberStore extends MemberStore {
  hold: Promise<void> | null = null;
  reached: () => void = () => undefined;
  override async projectsOf(userId: string): Promise<ProjectAccess[]> {
    const u = await super.projectsOf(userId);
    const h = this.hold;
    if (h) {
      this.hold = null;
      this.reached();
      await h;
    }
    return u;
  }
}

let db: TestDb;
let redis: RedisClient;
const prefix = testPrefix('loginrace');
beforeAll(async () => {
  db = await openTestDb('loginrace');
  redis = createRedis({ redisUrl: REDIS_URL, redisClusterNodes: null });
});
afterAll(async () => {
  await deleteByPrefix(redis as Redis, prefix);
  redis.disconnect();
  await db?.close();
});

const ADMIN: Principal = { kind: 'anonymous', project: 'default', role: 'admin', root: false, keyId: null, label: 'test' };
const req = { ip: '192.0.2.1', headers: {} } as unknown as FastifyRequest;

test.each([
  ['disabled', { disabled: true }],
  ['given another role', { role: 'operator' as const }],
])('a user %s while its login is in flight gets no live session', async (_what, change) => {
  const users = new UserStore(db.dataSource);
  const members = new HeldMemberStore(db.dataSource);
  const sessions = new SessionStore(new RedisSessionRecords(redis, prefix), 60_000, 600_000);
  const admin = new UsersService(users, sessions);
  const login = new LoginService(users, sessions, new LoginLimiter(new RedisLoginAttempts(redis, prefix)), members);
  const username = `racer-${Object.keys(change)[0]}`;
  const u = await admin.create(ADMIN, { username, password: 'a long enough password', role: 'viewer' });

  let release!: () => void;
  members.hold = new Promise<void>((r) => (release = r));
  const reached = new Promise<void>((r) => (members.reached = r));
  const pending = login.login({ username, password: 'a long enough password' }, req).then(
    (ok) => ({ ok }),
    (err: Error) => ({ err }),
  );
  await reached; // the login has read the user (enabled, viewer)
  await admin.update(ADMIN, u.id, change); // commits, then revokes: no session is listed yet
  release();
  const out = await pending;
  if ('ok' in out) {
    // Had it succeeded, its session would have to be dead.
    expect(await new SessionStore(new RedisSessionRecords(redis, prefix), 60_000, 600_000).authenticate(out.ok.token)).toBeNull();
  } else {
    expect(out.err.message).toBe('invalid username or password');
  }
  expect(await redis.scard(`${prefix}:auth:user-sessions:${u.id}`)).toBe(0);
});
