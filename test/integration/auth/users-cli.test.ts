import { spawn } from 'node:child_process';
import { resolve } from 'node:path';
import type Redis from 'ioredis';
import { verifyPassword } from '../../../src/auth/password-hasher';
import { SessionStore } from '../../../src/auth/session-store';
import { createRedis } from '../../../src/redis/connection';
import { RedisSessionRecords } from '../../../src/redis/stores/session-records';
import { openTestDb, type TestDb } from '../../support/postgres';
import { deleteByPrefix, REDIS_URL, testPrefix } from '../../support/redis';

/** `npm run users`: the first admin from the command line, the password from stdin only. Needs `npx nest build`. */
const SCRIPT = resolve(__dirname, '../../../scripts/users.js');
let db: TestDb;
let prefix: string;

beforeAll(async () => {
  db = await openTestDb('userscli');
  prefix = testPrefix('userscli');
});
afterAll(async () => {
  const r = createRedis({ redisUrl: REDIS_URL, redisClusterNodes: null });
  await deleteByPrefix(r as Redis, prefix);
  r.disconnect();
  await db?.close();
});

function run(args: string[], stdin: string): Promise<{ code: number | null; out: string }> {
  return new Promise((res) => {
    const p = spawn(process.execPath, [SCRIPT, ...args], { env: { PATH: process.env.PATH ?? '', DATABASE_URL: db.url, REDIS_URL, REDIS_PREFIX: prefix }, stdio: ['pipe', 'pipe', 'pipe'] });
    let out = '';
    p.stdout.on('data', (d) => (out += d));
    p.stderr.on('data', (d) => (out += d));
    p.on('exit', (code) => res({ code, out }));
    p.stdin.end(stdin);
  });
}

const row = async (username: string) => (await db.dataSource.query(`SELECT id, password_hash FROM users WHERE lower(username) = lower($1)`, [username]))[0] as { id: string; password_hash: string } | undefined;

test('create: the password piped on stdin is stored as argon2id, never printed; the user is admin of its project', async () => {
  const pw = 'first admin password';
  const r = await run(['create', '--username', 'root-admin', '--role', 'admin'], `${pw}\n`);
  expect(r.code).toBe(0);
  expect(r.out).toMatch(/created user root-admin \(.+\), admin of project default/);
  expect(r.out).not.toContain(pw);
  const u = await row('root-admin');
  expect(u!.password_hash).toMatch(/^\$argon2id\$/);
  expect(await verifyPassword(u!.password_hash, pw)).toBe(true);
  const list = await run(['list'], '');
  expect(list.code).toBe(0);
  expect(list.out).toContain('root-admin');
});

test('a password on the command line is refused (exit 2, nothing created); a short one too (exit 1); so is a taken username', async () => {
  const argv = await run(['create', '--username', 'argv-user', '--role', 'admin', '--password', 'on the command line'], '');
  expect(argv.code).toBe(2);
  expect(argv.out).toMatch(/never taken from the command line/);
  const short = await run(['create', '--username', 'short-user', '--role', 'admin'], 'short\n');
  expect(short.code).toBe(1);
  expect(short.out).toMatch(/at least 12 characters/);
  expect(await row('argv-user')).toBeUndefined();
  expect(await row('short-user')).toBeUndefined();
  expect((await run(['create', '--username', 'ROOT-ADMIN', '--role', 'viewer'], 'another long password\n')).code).toBe(1);
});

test('passwd: a new password, and the user\'s sessions end', async () => {
  await run(['create', '--username', 'forgetful', '--role', 'viewer'], 'the old password\n');
  const u = await row('forgetful');
  const redis = createRedis({ redisUrl: REDIS_URL, redisClusterNodes: null });
  try {
    const sessions = new SessionStore(new RedisSessionRecords(redis, prefix), 60_000, 600_000);
    const s = await sessions.create({ userId: u!.id, username: 'forgetful', project: 'default', role: 'viewer' });
    const r = await run(['passwd', '--username', 'forgetful'], 'the new password\n');
    expect(r.code).toBe(0);
    expect(r.out).toContain('1 session(s) ended');
    expect(await new SessionStore(new RedisSessionRecords(redis, prefix), 60_000, 600_000).authenticate(s.token)).toBeNull();
    const after = await row('forgetful');
    expect(await verifyPassword(after!.password_hash, 'the new password')).toBe(true);
    expect(await verifyPassword(after!.password_hash, 'the old password')).toBe(false);
  } finally {
    redis.disconnect();
  }
});
