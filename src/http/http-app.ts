import { randomUUID } from 'node:crypto';
import type { DynamicModule } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { FastifyAdapter, NestFastifyApplication } from '@nestjs/platform-fastify';
import { DocumentBuilder, SwaggerModule } from '@nestjs/swagger';
import rateLimit from '@fastify/rate-limit';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { SluiceConfig } from '../config/config';
import type { Logger } from '../logging/logger';
import type { RedisClient } from '../redis/connection';
import { REDIS } from '../redis/redis.module';
import { errorBody, mapError } from './error-envelope';
import { EnvelopeExceptionFilter } from './exception.filter';
import { createValidationPipe } from './validation';
import { registerRequestLog } from './request-log';
import { UnavailableError } from '../core/errors';
import { installLeanAsyncBind } from './lean-async-bind';
import { cacheValidationMetadata } from './validation-metadata-cache';
import { assertEveryRouteDeclared } from '../auth/route-table';
import { registerCrossSite } from '../auth/cross-site';
import { AuthGuard } from '../auth/auth.guard';
import { ROLES } from '../core/access';
import { registerOperatorAudit } from '../oplog/oplog-recorder';

/** Hard cap: bodies above it are refused before they are read (the client may see a reset). */
const READ_LIMIT_BYTES = 64 * 1024 * 1024;

/**
 * Largest body a route accepts, bytes: `POST /jobs/batch` up to the read cap
 * (1,000 jobs), every other route one maximal payload plus its envelope.
 * Bodies up to the read cap are read in full before a 413, so clients that
 * are still sending get the 413 answer rather than a broken pipe.
 */
export function bodyLimitBytes(config: Pick<SluiceConfig, 'maxPayloadBytes'>, url = ''): number {
  if (/^\/jobs\/batch(\?|$)/.test(url)) return READ_LIMIT_BYTES;
  return Math.min(READ_LIMIT_BYTES, config.maxPayloadBytes + 64 * 1024);
}

/** A client's X-Request-Id is echoed when it is printable ASCII of 1..200 characters; otherwise one is made. */
function requestId(req: { headers: Record<string, string | string[] | undefined> }): string {
  const h = req.headers['x-request-id'];
  return typeof h === 'string' && /^[\x20-\x7e]{1,200}$/.test(h) && h.trim() !== '' ? h : randomUUID();
}

/** Paths served even while Redis is down (they report on it, or need nothing: the console's static files). */
const OPS_PATHS = /^\/(healthz|readyz|metrics|docs|ui)(\/|-json|\?|$)/;
/** The OpenAPI document and Swagger UI (served outside Nest's router, so outside the guard). */
const DOCS_PATHS = /^\/docs(\/|-json|\?|$)/;

/**
 * Creates the HTTP application (not yet listening) on the Fastify adapter:
 * - body limit {@link bodyLimitBytes} per route (413), JSON only; an empty JSON body is
 *   treated as no body, prototype-poisoning keys are refused (400);
 * - `X-Request-Id` on every response (echoed or generated);
 * - one exception filter for the API.md error envelope and one validation
 *   pipe (class-validator DTOs, unknown fields rejected);
 * - 503 `unavailable` at once, without waiting on retries, while the Redis
 *   connection is not ready (except the ops endpoints);
 * - optional per-client rate limit (API_RATE_LIMIT_MAX per API_RATE_LIMIT_WINDOW_MS,
 *   429 `rate_limited` with Retry-After), counted in Redis;
 * - OpenAPI at `/docs` (Swagger UI) and `/docs-json`, from the same DTOs (api role only);
 * - two process-wide fast paths for per-request library costs:
 *   {@link installLeanAsyncBind} and {@link cacheValidationMetadata}.
 * Used by main.ts for every role (a process without `api` has only the ops
 * controllers) and by the e2e tests, so all run the same stack.
 */
export async function createHttpApp(module: DynamicModule, config: SluiceConfig, log: Logger): Promise<NestFastifyApplication> {
  // Per-request costs of the libraries, removed without changing behaviour (see each file).
  installLeanAsyncBind();
  cacheValidationMetadata();
  const adapter = new FastifyAdapter({
    bodyLimit: READ_LIMIT_BYTES,
    genReqId: requestId,
    requestIdHeader: false,
    logger: false,
    return503OnClosing: true,
    // TRUST_PROXY (default off): req.ip and req.protocol from X-Forwarded-* only behind a proxy named there.
    trustProxy: config.trustProxy,
  });
  const fastify = adapter.getInstance();
  const jsonParser = fastify.getDefaultJsonParser('error', 'error');
  fastify.removeContentTypeParser('application/json');
  fastify.addContentTypeParser('application/json', { parseAs: 'string' }, (req, body, done) => {
    if (typeof body === 'string' && body.length > bodyLimitBytes(config, req.url) && Buffer.byteLength(body) > bodyLimitBytes(config, req.url)) {
      return done(Object.assign(new Error('request body too large'), { statusCode: 413 }), undefined);
    }
    if (body === '' || (typeof body === 'string' && body.trim() === '')) return done(null, undefined);
    jsonParser(req, body as string, done);
  });

  // Every route the router holds, for the route-table tests (test/e2e/auth-matrix.test.ts).
  const liveRoutes: { method: string; url: string }[] = [];
  fastify.addHook('onRoute', (r) => {
    for (const m of ([] as string[]).concat(r.method)) liveRoutes.push({ method: m, url: r.url });
  });
  fastify.decorate('sluiceRoutes', liveRoutes);
  // JSON only: Fastify's built-in text/plain parser would let a cross-site `no-cors`
  // form post (text/plain) reach a route; any other content type is 415.
  fastify.removeContentTypeParser('text/plain');

  const app = await NestFactory.create<NestFastifyApplication>(module, adapter, { logger: false, abortOnError: false, bodyParser: false });
  // Routes are data: one without an @Access declaration stops the boot.
  assertEveryRouteDeclared(app);
  const redis = app.get<RedisClient>(REDIS);
  const guard = app.get(AuthGuard, { strict: false });
  const refuse = (req: FastifyRequest, reply: FastifyReply, e: unknown) => {
    const m = mapError(e);
    void reply.status(m.status).headers(m.headers).send(errorBody(m, String(req.id)));
  };
  fastify.addHook('onRequest', (req: FastifyRequest, reply: FastifyReply, done: (err?: Error) => void) => {
    void reply.header('x-request-id', req.id);
    // Swagger UI's assets are relative: served from `/docs/` they would be looked for under /docs/docs/.
    if (req.url === '/docs/') {
      void reply.redirect('/docs', 301);
      return;
    }
    if (config.auth && DOCS_PATHS.test(req.url)) {
      // Swagger UI is served by Fastify directly, outside the guard: any valid key may read it.
      Promise.resolve()
        .then(() => guard.principalFor(req, ROLES))
        .then(
          () => done(),
          (e: unknown) => refuse(req, reply, e),
        );
      return;
    }
    if (redis.status !== 'ready' && !OPS_PATHS.test(req.url)) {
      const m = mapError(new UnavailableError(`Redis is unreachable (connection ${redis.status}); retry later`));
      void reply.status(m.status).send(errorBody(m, String(req.id)));
      return;
    }
    done();
  });
  // After the request-id hook, so a refusal carries X-Request-Id too.
  registerCrossSite(fastify, config, refuse);
  if (config.apiRateLimitMax > 0) {
    await app.register(rateLimit as never, {
      max: config.apiRateLimitMax,
      timeWindow: config.apiRateLimitWindowMs,
      // Shared through Redis, so the limit holds across api replicas.
      redis,
      nameSpace: `${config.redisPrefix}:ratelimit:`,
      allowList: (req: FastifyRequest) => OPS_PATHS.test(req.url),
      errorResponseBuilder: (_req: FastifyRequest, ctx: { after: string; ttl: number }) =>
        Object.assign(new Error(`rate limit exceeded: retry in ${ctx.after}`), { statusCode: 429, retryAfterMs: ctx.ttl }),
    });
  }
  registerRequestLog(app, log);
  // The operator audit log's write path (and its boot check: every state-changing route declares @Audited/@NotAudited).
  registerOperatorAudit(app, config, log);
  app.useGlobalFilters(new EnvelopeExceptionFilter(log));
  app.useGlobalPipes(createValidationPipe());

  if (!config.roles.has('api')) return app; // ops endpoints only: no API to document
  const doc = SwaggerModule.createDocument(
    app,
    new DocumentBuilder()
      .setTitle('Sluice')
      .setDescription('Distributed job queue: Redis hot path, PostgreSQL history. Contract: API.md.')
      .setVersion('1')
      .build(),
  );
  SwaggerModule.setup('docs', app, doc, { jsonDocumentUrl: 'docs-json' });
  return app;
}
