import { randomBytes } from 'node:crypto';
import type Redis from 'ioredis';
import { Projects1796001500000 } from '../../src/postgres/migrations/1796001500000-Projects';
import { Organizations1796002200000 } from '../../src/postgres/migrations/1796002200000-Organizations';
import { createRedis } from '../../src/redis/connection';
import { startTestApi, type TestApi } from '../support/http';
import { openTestDb, type TestDb } from '../support/postgres';
import { deleteByPrefix, REDIS_URL, testPrefix } from '../support/redis';

/**
 * Upgrade in place (docs/security.md, "Projects"): an installation from
 * before projects — jobs of `default`'s queues in Redis and mirrored in
 * PostgreSQL, a dead-letter entry, a schedule — keeps working as the
 * project `default` once the new version starts over it, and nothing moves.
 *
 * The "before" is written by the app as the `default` project (whose Redis
 * keys and PostgreSQL rows are byte for byte those of the version before
 * projects: `<prefix>:{<queue>}:<kind>`, bare names in every `queue` column),
 * then the schema is taken back to that version (the Projects migration's
 * `down`, its row removed from `sluice_migrations`) and the registry's Redis
 * hash removed; the new app then starts over it and migrates.
 */
const ROOT = 'sk_' + randomBytes(32).toString('base64url');
let db: TestDb;
let prefix: string;
let app: TestApi | null = null;
const env = () => ({ AUTH: 'on', SLUICE_BOOTSTRAP_ADMIN_KEY: ROOT, ROLE: 'api,audit', DATABASE_URL: db.url, REDIS_PREFIX: prefix });
const as = (r: any) => r.set('authorization', `Bearer ${ROOT}`);

const before = { waiting: [] as string[], completed: '', dlq: '', schedule: '' };

beforeAll(async () => {
  db = await openTestDb('upgrade');
  prefix = testPrefix('upgrade');
});
afterAll(async () => {
  await app?.close();
  const r = createRedis({ redisUrl: REDIS_URL, redisClusterNodes: null });
  await deleteByPrefix(r as Redis, prefix);
  r.disconnect();
  await db.close();
});

test('data of the version before projects stays visible and working as the project default', async () => {
  // 1. The installation as it was.
  app = await startTestApi('upgrade-old', env());
  const http = app.http;
  expect((await as(http.put('/queues/legacy')).send({ external: true })).status).toBe(200);
  for (let i = 0; i < 4; i++) before.waiting.push((await as(http.post('/jobs')).send({ queue: 'legacy', type: 'ext.task', payload: { i } })).body.id);
  const c = await as(http.post('/queues/legacy/claim')).send({ workerId: 'old-w', max: 2 });
  expect(c.body.jobs).toHaveLength(2);
  const [done, dead] = c.body.jobs;
  expect((await as(http.post(`/jobs/${done.id}/complete`)).send({ lockToken: done.lockToken, result: 'ok' })).status).toBe(200);
  expect((await as(http.post(`/jobs/${dead.id}/fail`)).send({ lockToken: dead.lockToken, error: { message: 'old failure' }, retryable: false })).status).toBe(200);
  before.completed = done.id;
  before.dlq = dead.id;
  before.waiting = before.waiting.filter((id) => id !== done.id && id !== dead.id);
  const s = await as(http.post('/schedules')).send({ name: 'nightly', cron: '0 3 * * *', queue: 'legacy', type: 'ext.task' });
  expect(s.status).toBe(201);
  before.schedule = s.body.id;
  // Mirrored to PostgreSQL (the list waits for the mirror).
  expect((await as(http.get('/jobs?queue=legacy'))).body.items).toHaveLength(4);
  expect((await as(http.get('/jobs/dlq/all'))).body.items.map((j: { id: string }) => j.id)).toEqual([dead.id]);
  await app.close();
  app = null;

  // 2. Back to the schema and Redis layout of the version before projects.
  const redis = createRedis({ redisUrl: REDIS_URL, redisClusterNodes: null });
  try {
    await redis.del(`${prefix}:projects`);
    // Where the old version kept a queue's keys: `<prefix>:{<queue>}:<kind>`, no project in them.
    expect(await redis.zcard(`${prefix}:{legacy}:waiting`)).toBe(2);
    expect(await redis.zcard(`${prefix}:{legacy}:failed`)).toBe(1);
    expect(await redis.exists(`${prefix}:{legacy}:job:${before.dlq}`)).toBe(1);
    expect((await redis.keys(`${prefix}:{*/*}*`)).length).toBe(0);
  } finally {
    redis.disconnect();
  }
  const qr = db.dataSource.createQueryRunner();
  try {
    // Organizations (a later migration) hold projects: taken back first, as an upgrade from then replays both.
    await new Organizations1796002200000().down(qr);
    await new Projects1796001500000().down(qr);
  } finally {
    await qr.release();
  }
  await db.dataSource.query(`DELETE FROM sluice_migrations WHERE name IN ('Projects1796001500000', 'Organizations1796002200000')`);
  const cols: { column_name: string }[] = await db.dataSource.query(`SELECT column_name FROM information_schema.columns WHERE table_name = 'schedules'`);
  expect(cols.map((x) => x.column_name)).not.toContain('project');
  expect(await db.dataSource.query(`SELECT count(*)::int AS n FROM jobs WHERE queue = 'legacy'`)).toEqual([{ n: 4 }]);

  // 3. The new version starts over it: migrates, and serves it all as `default`.
  app = await startTestApi('upgrade-new', env());
  const h = app.http;
  const applied: { name: string }[] = await db.dataSource.query(`SELECT name FROM sluice_migrations WHERE name = 'Projects1796001500000'`);
  expect(applied).toHaveLength(1);
  expect((await as(h.get('/projects'))).body.map((p: { name: string }) => p.name)).toEqual(['default']);
  const listed = (await as(h.get('/jobs'))).body.items.map((j: { id: string }) => j.id).sort();
  expect(listed).toEqual([...before.waiting, before.completed, before.dlq].sort());
  expect((await as(h.get(`/jobs/${before.completed}`))).body).toMatchObject({ status: 'completed', queue: 'legacy', result: 'ok' });
  expect((await as(h.get('/queues/legacy'))).body).toMatchObject({ name: 'legacy', external: true, counts: { waiting: 2, completed: 1, failed: 1 } });
  expect((await as(h.get('/dashboard/stats'))).body.queues.legacy).toMatchObject({ waiting: 2, completed: 1, failed: 1 });
  const sched = (await as(h.get('/schedules'))).body;
  expect(sched.map((x: { id: string; name: string; queue: string }) => [x.id, x.name, x.queue])).toEqual([[before.schedule, 'nightly', 'legacy']]);
  expect((await as(h.patch(`/schedules/${before.schedule}`)).send({ cron: '0 4 * * *' })).status).toBe(200);
  expect((await as(h.post('/schedules')).send({ name: 'nightly', cron: '0 3 * * *', queue: 'legacy', type: 'ext.task' })).status).toBe(409);
  // The DLQ entry retries; the waiting jobs are claimed and completed.
  expect((await as(h.get('/jobs/dlq/all'))).body.items.map((j: { id: string }) => j.id)).toEqual([before.dlq]);
  expect((await as(h.post(`/jobs/${before.dlq}/retry`)).send({})).body.status).toBe('waiting');
  const claimed = await as(h.post('/queues/legacy/claim')).send({ workerId: 'new-w', max: 10 });
  expect(claimed.body.jobs.map((j: { id: string }) => j.id).sort()).toEqual([...before.waiting, before.dlq].sort());
  for (const j of claimed.body.jobs) expect((await as(h.post(`/jobs/${j.id}/complete`)).send({ lockToken: j.lockToken })).status).toBe(200);
  expect((await as(h.get('/queues/legacy'))).body.counts).toMatchObject({ waiting: 0, active: 0, completed: 4, failed: 0 });
  // A new project beside it sees none of it, and may reuse its names.
  expect((await as(h.post('/projects')).send({ name: 'acme' })).status).toBe(201);
  const acme = (r: any) => as(r).set('x-sluice-project', 'acme');
  expect((await acme(h.get('/jobs'))).body.items).toEqual([]);
  expect((await acme(h.get('/schedules'))).body).toEqual([]);
  expect((await acme(h.put('/queues/legacy')).send({ external: true })).status).toBe(200);
  expect((await acme(h.post('/schedules')).send({ name: 'nightly', cron: '0 3 * * *', queue: 'legacy', type: 'ext.task' })).status).toBe(201);
  expect((await as(h.get('/queues/legacy'))).body.counts.completed).toBe(4);
}, 120_000);
