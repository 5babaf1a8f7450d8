import { Writable } from 'node:stream';
import type { NestFastifyApplication } from '@nestjs/platform-fastify';
import type Redis from 'ioredis';
import request from 'supertest';
import { AppModule } from '../../src/app.module';
import { loadConfig } from '../../src/config/config';
import { createHttpApp } from '../../src/server/http-app';
import { createLogger } from '../../src/logging/logger';
import { createRedis } from '../../src/redis/connection';
import { queueKeys } from '../../src/redis/keys';
import { openTestDb, TestDb } from '../support/postgres';
import { deleteByPrefix, REDIS_URL, testPrefix } from '../support/redis';
import { waitUntil } from '../support/timing';

/**
 * Errors of PostgreSQL and Redis reach the log without the data they were
 * sent: the app runs with the process logger (createLogger, debug level)
 * writing into memory; a PostgreSQL error (a CHECK constraint refusing a row
 * whose parameters hold a marker string) and a Redis script error (WRONGTYPE
 * while the enqueue script carries the payload) are provoked through the API;
 * the error lines are there, with their codes, and the marker is nowhere.
 */
describe('logs never carry payload values or SQL parameters (e2e)', () => {
  const MARKER = 'payload-marker-7f3a9c';
  let app: NestFastifyApplication;
  let db: TestDb;
  let prefix: string;
  let redis: Redis;
  let url: string;
  const lines: string[] = [];
  beforeAll(async () => {
    db = await openTestDb('e2e-log-redaction');
    prefix = testPrefix('e2e-log-redaction');
    const config = loadConfig({ REDIS_URL, DATABASE_URL: db.url, REDIS_PREFIX: prefix, ROLE: 'api', DIAGNOSTIC_HANDLERS: 'true', LOG_LEVEL: 'debug' });
    const sink = new Writable({
      write(chunk: Buffer, _enc, done) {
        lines.push(...chunk.toString().split('\n').filter(Boolean));
        done();
      },
    });
    const log = createLogger('debug', 'sluice', false, sink);
    app = await createHttpApp(AppModule.forRoles(config, log), config, log);
    await app.listen(0, '127.0.0.1');
    url = `http://127.0.0.1:${(app.getHttpServer().address() as { port: number }).port}`;
    redis = createRedis({ redisUrl: REDIS_URL, redisClusterNodes: null }) as Redis;
  });
  afterAll(async () => {
    await app?.close();
    if (redis) {
      await deleteByPrefix(redis, prefix);
      redis.disconnect();
    }
    await db?.close();
  });

  const errorLines = () => lines.map((l) => JSON.parse(l) as Record<string, unknown>).filter((l) => (l.level as number) >= 40);

  it('a PostgreSQL error: logged with its SQLSTATE and constraint, without the parameters, the query or the failing row', async () => {
    // A constraint that refuses the row: the INSERT's parameters hold the marker (name and payload).
    await db.dataSource.query(`ALTER TABLE schedules ADD CONSTRAINT refuse_marker CHECK (name NOT LIKE '%marker%')`);
    const res = await request(url)
      .post('/schedules')
      .set('X-Request-Id', 'pg-error-1')
      .send({ name: `n-${MARKER}`, cron: '0 3 * * *', type: 'diag.echo', payload: { secret: MARKER } });
    expect(res.status).toBe(500);
    expect(res.text).not.toContain(MARKER);
    const line = await waitUntil('the error line', async () => errorLines().find((l) => l.reqId === 'pg-error-1'));
    expect(line).toMatchObject({ msg: 'request failed', err: { type: 'QueryFailedError', code: '23514', table: 'schedules', constraint: 'refuse_marker' } });
    expect(JSON.stringify(lines)).not.toContain(MARKER);
  });

  it('a Redis script error: logged without the command arguments', async () => {
    // The queue's waiting list is a string: the enqueue script fails with WRONGTYPE.
    await redis.set(queueKeys(prefix, 'poisoned').waiting, 'not a list');
    const res = await request(url).post('/jobs').set('X-Request-Id', 'redis-error-1').send({ type: 'diag.echo', queue: 'poisoned', payload: { secret: MARKER } });
    expect(res.status).toBe(500);
    const line = await waitUntil('the error line', async () => errorLines().find((l) => l.reqId === 'redis-error-1'));
    expect(JSON.stringify(line.err)).toMatch(/WRONGTYPE/);
    expect(JSON.stringify(lines)).not.toContain(MARKER);
  });
});
