import type { NestFastifyApplication } from '@nestjs/platform-fastify';
import request from 'supertest';
import { AppModule } from '../../src/app.module';
import { loadConfig, SluiceConfig } from '../../src/config/config';
import { createHttpApp } from '../../src/server/http-app';
import { createLogger } from '../../src/logging/logger';
import { openTestDb, TestDb } from './postgres';
import { deleteByPrefix, REDIS_URL, testPrefix } from './redis';
import { createRedis, type RedisClient } from '../../src/redis/connection';
import { REDIS_STORES } from '../../src/redis/redis.module';
import type { RedisStores } from '../../src/redis/stores';
import type Redis from 'ioredis';
import type { OpenAPIObject } from '@nestjs/swagger';
import { OpenApiValidator, validatingAgent } from './openapi-validator';

/** Validators by document, shared by the apps of one test file (see {@link validatorFor}). */
const validators = new WeakMap<OpenAPIObject, OpenApiValidator>();

/**
 * The response validator for `app`'s OpenAPI document (null without the api
 * role: no document). Built on first use.
 */
export function validatorFor(app: NestFastifyApplication): OpenApiValidator | null {
  const doc = (app.getHttpAdapter().getInstance() as unknown as { sluiceOpenApi?: OpenAPIObject }).sluiceOpenApi;
  if (!doc) return null;
  let v = validators.get(doc);
  if (!v) validators.set(doc, (v = new OpenApiValidator(doc)));
  return v;
}

/** A real Sluice HTTP app in this process, on real Redis and a private Postgres database. */
export interface TestApi {
  app: NestFastifyApplication;
  config: SluiceConfig;
  /** Base URL, e.g. http://127.0.0.1:41234 */
  url: string;
  prefix: string;
  db: TestDb;
  /**
   * supertest agent bound to the app's URL: `api.http.post('/jobs').send({...})`.
   * Every response it receives is validated against the app's OpenAPI
   * document (test/support/openapi-validator.ts): an undocumented route or
   * status, a missing header or a body off its schema fails the request.
   */
  http: ReturnType<typeof request>;
  /** Stops the app, deletes its Redis keys and drops its database. */
  close(): Promise<void>;
}

/**
 * Starts the same stack as `node dist/main.js` (createHttpApp + AppModule)
 * in-process, listening on a free port, with a fresh REDIS_PREFIX and a
 * fresh migrated database. `env` overrides the test defaults
 * (ROLE=api, DIAGNOSTIC_HANDLERS=true, LOG_LEVEL=silent). Pass
 * ROLE=all (or api,worker,audit...) to run jobs end to end.
 */
export async function startTestApi(name: string, env: Record<string, string> = {}): Promise<TestApi> {
  const db = await openTestDb(name);
  const prefix = testPrefix(name);
  const config = loadConfig({
    REDIS_URL,
    DATABASE_URL: db.url,
    REDIS_PREFIX: prefix,
    ROLE: 'api',
    DIAGNOSTIC_HANDLERS: 'true',
    LOG_LEVEL: 'silent',
    PORT: '0',
    ...env,
  });
  const log = createLogger(config.logLevel);
  const app = await createHttpApp(AppModule.forRoles(config, log), config, log);
  await app.listen(0, '127.0.0.1');
  const addr = app.getHttpServer().address() as { port: number };
  const url = `http://127.0.0.1:${addr.port}`;
  return {
    app,
    config,
    url,
    prefix,
    db,
    http: validatingAgent(request(url), () => validatorFor(app)),
    close: async () => {
      const v = validatorFor(app);
      if (v && process.env.OPENAPI_COVERAGE) process.stdout.write(`${v.coverageLine()}: ${[...v.exercised].sort().join(', ')}\n`);
      await app.close();
      const r = createRedis({ redisUrl: REDIS_URL, redisClusterNodes: null });
      await deleteByPrefix(r as Redis, prefix);
      r.disconnect();
      await db.close();
    },
  };
}

/**
 * A test API (as {@link startTestApi}) with `queue` made external, and the
 * app's own stores (src/redis/stores) for tests that look at Redis directly;
 * they close with the app.
 */
export async function startExternalQueueApi(name: string, queue: string, env: Record<string, string> = {}): Promise<{ api: TestApi; stores: RedisStores; redis: RedisClient }> {
  const api = await startTestApi(name, env);
  const stores = api.app.get<RedisStores>(REDIS_STORES);
  expect((await api.http.put(`/queues/${queue}`).send({ external: true })).status).toBe(200);
  return { api, stores, redis: stores.ctx.redis };
}
