import { randomBytes } from 'node:crypto';
import type { NestFastifyApplication } from '@nestjs/platform-fastify';
import request from 'supertest';
import { AppModule } from '../../src/app.module';
import { openPostgres } from '../../src/postgres/data-source';
import { loadConfig } from '../../src/config/config';
import { createHttpApp } from '../../src/server/http-app';
import { createLogger } from '../../src/logging/logger';
import { OplogFlusher } from '../../src/oplog/oplog-flusher';
import { parseRecord } from '../../src/oplog/oplog-record';
import { createRedis, type RedisClient } from '../../src/redis/connection';
import { oplogKeys } from '../../src/redis/keys';
import { createRedisStores } from '../../src/redis/stores';
import { validatorFor } from '../support/http';
import { validatingAgent } from '../support/openapi-validator';
import { privatePostgres, type PrivatePostgres } from '../support/private-postgres';
import { deleteByPrefix, REDIS_URL, sleep, testPrefix } from '../support/redis';
import { waitUntil } from '../support/timing';
import type Redis from 'ioredis';
import type { DataSource } from 'typeorm';

/**
 * The operator audit log when PostgreSQL goes away (its own server: the
 * shared one is never stopped): records wait in Redis and are written once
 * it is back, each exactly once, with two api replicas flushing the same
 * buffer; a record a dead replica had taken is taken over and not doubled.
 */
jest.setTimeout(120_000);
const BOOTSTRAP = 'sk_' + randomBytes(32).toString('base64url');
const prefix = testPrefix('oplogpg');
let pg: PrivatePostgres;
let dbUrl: string;
let redis: RedisClient;
let db: DataSource;
const apps: NestFastifyApplication[] = [];
const https: ReturnType<typeof request>[] = [];

async function replica(): Promise<void> {
  const config = loadConfig({ REDIS_URL, DATABASE_URL: dbUrl, REDIS_PREFIX: prefix, ROLE: 'api', LOG_LEVEL: 'silent', AUTH: 'on', SLUICE_BOOTSTRAP_ADMIN_KEY: BOOTSTRAP });
  const log = createLogger(config.logLevel);
  const app = await createHttpApp(AppModule.forRoles(config, log), config, log);
  await app.listen(0, '127.0.0.1');
  apps.push(app);
  // Every answer is checked against the OpenAPI document, as startTestApi does (test/support/http.ts).
  https.push(validatingAgent(request(`http://127.0.0.1:${(app.getHttpServer().address() as { port: number }).port}`), () => validatorFor(app)));
}

beforeAll(async () => {
  pg = await privatePostgres('oplog');
  await pg.start();
  dbUrl = pg.url('sluice_oplog');
  redis = createRedis({ redisUrl: REDIS_URL, redisClusterNodes: null });
  await replica();
  await replica();
});
afterAll(async () => {
  for (const a of apps) await a.close().catch(() => undefined);
  await db?.destroy().catch(() => undefined);
  await deleteByPrefix(redis as Redis, prefix);
  redis.disconnect();
  await pg?.destroy();
});

const rowsOf = async (): Promise<{ request_id: string; n: string }[]> => {
  if (!db?.isInitialized) db = (await openPostgres(dbUrl, 2)).dataSource;
  return db.query(`SELECT request_id, count(*) AS n FROM operator_audit GROUP BY request_id`);
};

test('PostgreSQL down: records wait in Redis, then each is written once by the two replicas', async () => {
  await pg.stop('immediate');
  const rids: string[] = [];
  const statuses = new Map<string, number>();
  for (let i = 0; i < 40; i++) {
    const r = await https[i % 2].post(`/queues/outage-${i}/pause`).set('authorization', `Bearer ${BOOTSTRAP}`);
    // The pause is applied in Redis; its answer reads the queue's counts from PostgreSQL (503 now): recorded either way.
    expect([200, 503]).toContain(r.status);
    rids.push(r.headers['x-request-id']);
    statuses.set(r.headers['x-request-id'], r.status);
  }
  await sleep(1500); // both flushers try (and fail) meanwhile
  const { stream } = oplogKeys(prefix);
  expect(await redis.xlen(stream)).toBe(40);
  const buffered = (await redis.xrange(stream, '-', '+')).map(([, f]) => parseRecord(f[1])!);
  expect(buffered.map((r) => r.requestId).sort()).toEqual([...rids].sort());
  for (const r of buffered) expect(r.status).toBe(statuses.get(r.requestId!));

  await pg.start();
  const rows = await waitUntil('every buffered record in PostgreSQL', async () => {
    const r = await rowsOf().catch(() => []);
    return r.length >= 40 && r;
  }, 30_000, 200);
  expect(rows.map((r) => r.request_id).sort()).toEqual([...rids].sort());
  expect(rows.filter((r) => Number(r.n) !== 1)).toEqual([]);
  await waitUntil('the buffer emptied', async () => (await redis.xlen(stream)) === 0, 10_000, 100);
});

test('a replica that died holding records: another takes them over, and a record it had already written is not doubled', async () => {
  const { stream } = oplogKeys(prefix);
  // Stop the replicas' flushers from reading, so the "dead" consumer below gets the records.
  for (const a of apps) await a.get(OplogFlusher).stop();
  const rids: string[] = [];
  for (let i = 0; i < 6; i++) {
    const r = await https[0].post(`/queues/takeover-${i}/resume`).set('authorization', `Bearer ${BOOTSTRAP}`);
    rids.push(r.headers['x-request-id']);
  }
  await waitUntil('the records buffered', async () => (await redis.xlen(stream)) === 6, 5000, 50);
  // The dead replica: read all six, wrote the first three to PostgreSQL, died before acknowledging.
  const read = (await redis.xreadgroup('GROUP', 'oplog-flushers', 'dead-replica', 'COUNT', 10, 'STREAMS', stream, '>')) as [string, [string, string[]][]][];
  const taken = read[0][1].map(([, f]) => parseRecord(f[1])!);
  expect(taken).toHaveLength(6);
  for (const r of taken.slice(0, 3)) {
    await db.query(
      `INSERT INTO operator_audit (id, at, project, actor, actor_kind, action, target, method, path, status, address, request_id) VALUES ($1, now(), $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)`,
      [r.id, r.project, r.actor, r.actorKind, r.action, r.target, r.method, r.path, r.status, r.address, r.requestId],
    );
  }
  const survivor = new OplogFlusher(createRedisStores(redis, prefix).oplog, db, createLogger('silent'), 300);
  await sleep(400);
  expect(await survivor.flushOnce()).toBe(6);
  const rows = await rowsOf();
  for (const rid of rids) expect(rows.filter((r) => r.request_id === rid).map((r) => Number(r.n))).toEqual([1]);
  expect(await redis.xlen(stream)).toBe(0);
});
