import { randomUUID } from 'node:crypto';
import type { DynamicModule } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { FastifyAdapter, NestFastifyApplication } from '@nestjs/platform-fastify';
import { SwaggerModule } from '@nestjs/swagger';
import { buildOpenApiDocument } from './openapi-document';
import rateLimit from '@fastify/rate-limit';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { SluiceConfig } from '../config/config';
import type { Logger } from '../logging/logger';
import type { RedisClient } from '../redis/connection';
import { REDIS } from '../redis/redis.module';
import { httpRateLimitNamespace } from '../redis/keys';
import { StoreConnection } from '../core/ports';
import { errorBody, mapError } from '../http/error-envelope';
import { EnvelopeExceptionFilter } from './exception.filter';
import { createValidationPipe } from '../http/validation';
import { registerRequestLog } from './request-log';
import { UnavailableError } from '../core/errors';
import { CLAIM_LIMITS } from '../workers/external/dto/claim.dto';
import { createClientErrorHandler } from './client-error';
import { findBadParam } from '../core/json-guard';
import { METRICS_REGISTRY } from '../metrics/metrics.module';
import { BodyBudget } from './body-budget';
import { bodyLimitBytes, largestBodyBytes } from './body-limits';
import { jsonBodyParser, refused } from './json-body';
import { registerBodyMetrics } from './body-metrics';
import { installLeanAsyncBind } from './lean-async-bind';
import { cacheValidationMetadata } from './validation-metadata-cache';
import { assertEveryRouteDeclared } from '../http/route-table';
import { registerCrossSite } from '../auth/cross-site';
import { AuthGuard } from '../auth/auth.guard';
import { ROLES } from '../core/access';
import { registerOperatorAudit } from '../oplog/oplog-recorder';
import { answerDeadline } from './answer-deadline';

/** A client's X-Request-Id is echoed when it is printable ASCII of 1..200 characters; otherwise one is made. */
function requestId(req: { headers: Record<string, string | string[] | undefined> }): string {
  const h = req.headers['x-request-id'];
  return typeof h === 'string' && /^[\x20-\x7e]{1,200}$/.test(h) && h.trim() !== '' ? h : randomUUID();
}

/**
 * Longest path parameter, characters after percent-decoding (the router
 * measures the decoded value); longer ones answer 414. Above the longest
 * thing a path names — a concurrency key of `/queues/:name/keys/:key`, 128
 * characters — so that a key a little too long is still refused by its own
 * rule (400 naming `key`); ids and names are shorter still.
 */
export const MAX_PARAM_LENGTH = 256;

/**
 * The HTTP server's limits on slow and idle clients (Fastify/Node options), ms:
 * - `requestTimeout`: the whole request (headers and body) must arrive within
 *   HTTP_REQUEST_TIMEOUT_MS of its first byte, else 408 and the socket closes;
 *   it stops counting once the request is in, so a long poll is not cut;
 * - `headersTimeout`: the request line and headers within HTTP_HEADERS_TIMEOUT_MS;
 * - `keepAliveTimeout`: an idle keep-alive connection closes after HTTP_KEEP_ALIVE_TIMEOUT_MS;
 * - `connectionTimeout`: a socket silent in both directions for longer than the
 *   longest legitimate silence (a claim's long poll, CLAIM_LIMITS.maxWaitMs,
 *   or a whole request) plus 30 s is destroyed (a client that stopped reading);
 * - `connectionsCheckingInterval`: how often Node checks the first two (its
 *   default, 30 s, would let a slow client overstay by that much).
 */
export function serverTimeouts(config: Pick<SluiceConfig, 'httpRequestTimeoutMs' | 'httpHeadersTimeoutMs' | 'httpKeepAliveTimeoutMs'>) {
  return {
    requestTimeout: config.httpRequestTimeoutMs,
    headersTimeout: config.httpHeadersTimeoutMs,
    keepAliveTimeout: config.httpKeepAliveTimeoutMs,
    connectionTimeout: Math.max(config.httpRequestTimeoutMs, CLAIM_LIMITS.maxWaitMs) + 30_000,
    connectionsCheckingInterval: Math.max(50, Math.min(1000, Math.floor(config.httpHeadersTimeoutMs / 4))),
  };
}

/** Paths served even while Redis is down (they report on it, or need nothing: the console's static files). */
const OPS_PATHS = /^\/(healthz|readyz|metrics|docs|ui)(\/|-json|\?|$)/;
/** The OpenAPI document and Swagger UI (served outside Nest's router, so outside the guard). */
const DOCS_PATHS = /^\/docs(\/|-json|\?|$)/;

/**
 * Creates the HTTP application (not yet listening) on the Fastify adapter:
 * - JSON bodies read by {@link jsonBodyParser}: the limit per route ({@link bodyLimitBytes},
 *   413 unread), the bytes in flight (MAX_INFLIGHT_BODY_BYTES, 503 with Retry-After),
 *   large parses one per event-loop turn; JSON only (a body of any other
 *   content type: 415); an empty body is treated as no body, prototype-poisoning keys
 *   are refused (400), and so are bodies nested deeper than MAX_JSON_DEPTH levels and
 *   strings (keys and values, of bodies, query strings and path parameters) holding
 *   NUL or a lone surrogate (src/core/json-guard.ts; 400 naming the field);
 * - every error of the router and of Node's HTTP parser in the envelope too: bad URL
 *   400, over-long path segment 414, headers too large 431, malformed request 400,
 *   slow client 408 (see {@link serverTimeouts}; at most HTTP_MAX_CONNECTIONS sockets);
 * - `X-Request-Id` on every response (echoed or generated);
 * - one exception filter for the API.md error envelope and one validation
 *   pipe (class-validator DTOs, unknown fields rejected);
 * - 503 `unavailable` at once, without waiting on retries, while the Redis
 *   connection is not ready (except the ops endpoints), and for a request that
 *   arrives while the server is closing (instead of Fastify's own 503 body);
 * - 503 `unavailable` for a request still unanswered after HTTP_ANSWER_TIMEOUT_MS
 *   (a stalled Redis: see answer-deadline.ts; the outcome of its write is unknown);
 * - optional per-client rate limit (API_RATE_LIMIT_MAX per API_RATE_LIMIT_WINDOW_MS,
 *   429 `rate_limited` with Retry-After), counted in Redis;
 * - OpenAPI at `/docs` (Swagger UI) and `/docs-json`, from the same DTOs and the
 *   response schemas (src/server/openapi-document.ts; api role only);
 * - two process-wide fast paths for per-request library costs:
 *   {@link installLeanAsyncBind} and {@link cacheValidationMetadata}.
 * Used by main.ts for every role (a process without `api` has only the ops
 * controllers) and by the e2e tests, so all run the same stack.
 */
export async function createHttpApp(module: DynamicModule, config: SluiceConfig, log: Logger): Promise<NestFastifyApplication> {
  // Per-request costs of the libraries, removed without changing behaviour (see each file).
  installLeanAsyncBind();
  cacheValidationMetadata();
  const t = serverTimeouts(config);
  const adapter = new FastifyAdapter({
    bodyLimit: largestBodyBytes(config),
    genReqId: requestId,
    requestIdHeader: false,
    logger: false,
    // Off: Fastify's own 503 while closing is not the error envelope; the first onRequest hook answers it instead.
    return503OnClosing: false,
    // TRUST_PROXY (default off): req.ip and req.protocol from X-Forwarded-* only behind a proxy named there.
    trustProxy: config.trustProxy,
    routerOptions: { maxParamLength: MAX_PARAM_LENGTH },
    requestTimeout: t.requestTimeout,
    keepAliveTimeout: t.keepAliveTimeout,
    connectionTimeout: t.connectionTimeout,
    http: { requestTimeout: t.requestTimeout, headersTimeout: t.headersTimeout, connectionsCheckingInterval: t.connectionsCheckingInterval },
    // Bad URL (400) and over-long path segment (414): found by the router, before any hook.
    frameworkErrors: (err: Error, req: FastifyRequest, reply: FastifyReply) => {
      const m = mapError(err);
      void reply.header('x-request-id', req.id).status(m.status).send(errorBody(m, String(req.id)));
    },
    clientErrorHandler: createClientErrorHandler(log),
  });
  const fastify = adapter.getInstance();
  fastify.server.maxConnections = config.httpMaxConnections;
  const jsonParser = fastify.getDefaultJsonParser('error', 'error');
  fastify.removeContentTypeParser('application/json');
  fastify.removeContentTypeParser('text/plain');
  // Bodies are read by json-body.ts: route limits (413 unread), the in-flight bound (503), the parse queue.
  const budget = new BodyBudget(config.maxInflightBodyBytes);
  fastify.addContentTypeParser('application/json', jsonBodyParser({ budget, limitFor: (url) => bodyLimitBytes(config, url), jsonParser }));
  // Any other content type: no body (e.g. a bodiless POST .../pause) passes, a body is 415.
  fastify.addContentTypeParser('*', (req, _payload, done) => {
    const h = req.headers;
    if (h['transfer-encoding'] === undefined && (h['content-length'] === undefined || h['content-length'] === '0')) return done(null, undefined);
    done(Object.assign(new Error('unsupported media type'), { statusCode: 415 }), undefined);
  });

  // Every route the router holds, for the route-table tests (test/e2e/auth-matrix.test.ts).
  const liveRoutes: { method: string; url: string }[] = [];
  fastify.addHook('onRoute', (r) => {
    for (const m of ([] as string[]).concat(r.method)) liveRoutes.push({ method: m, url: r.url });
  });
  fastify.decorate('sluiceRoutes', liveRoutes);
  const app = await NestFactory.create<NestFastifyApplication>(module, adapter, { logger: false, abortOnError: false, bodyParser: false });
  // Routes are data: one without an @Access declaration stops the boot.
  assertEveryRouteDeclared(app);
  const redis = app.get<RedisClient>(REDIS);
  const connection = app.get(StoreConnection);
  const guard = app.get(AuthGuard, { strict: false });
  const refuse = (req: FastifyRequest, reply: FastifyReply, e: unknown) => {
    const m = mapError(e);
    void reply.status(m.status).headers(m.headers).send(errorBody(m, String(req.id)));
  };
  // Set as the server starts closing: preClose runs in the same tick as Fastify's own closing flag (before
  // server.close()), so every request routed from then on sees it.
  let closing = false;
  const deadline = answerDeadline(fastify, config.httpAnswerTimeoutMs, budget);
  registerBodyMetrics(app.get(METRICS_REGISTRY), budget);
  fastify.addHook('preClose', (done) => {
    closing = true;
    done();
  });
  fastify.addHook('onRequest', (req: FastifyRequest, reply: FastifyReply, done: (err?: Error) => void) => {
    void reply.header('x-request-id', req.id);
    if (closing) {
      // A request still arriving on an open connection in the last moments of shutdown (Fastify has already
      // set `Connection: close`): 503 at once, without running the route (a load balancer retries elsewhere).
      const m = mapError(new UnavailableError('the server is shutting down; retry on another instance'));
      void reply.status(m.status).header('connection', 'close').send(errorBody(m, String(req.id)));
      return;
    }
    // Swagger UI's assets are relative: served from `/docs/` they would be looked for under /docs/docs/.
    if (req.url === '/docs/') {
      void reply.redirect('/docs', 301);
      return;
    }
    const bad = findBadParam(req.query) ?? findBadParam(req.params);
    if (bad) {
      const m = mapError(refused('invalid parameter', bad));
      void reply.status(m.status).send(errorBody(m, String(req.id)));
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
    if (!connection.isReady() && !OPS_PATHS.test(req.url)) {
      const m = mapError(new UnavailableError(`Redis is unreachable (connection ${connection.state()}); retry later`));
      void reply.status(m.status).send(errorBody(m, String(req.id)));
      return;
    }
    deadline.arm(req, reply);
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
      nameSpace: httpRateLimitNamespace(config.redisPrefix),
      allowList: (req: FastifyRequest) => OPS_PATHS.test(req.url),
      errorResponseBuilder: (_req: FastifyRequest, ctx: { after: string; ttl: number }) =>
        Object.assign(new Error(`rate limit exceeded: retry in ${ctx.after}`), { statusCode: 429, retryAfterMs: ctx.ttl }),
    });
  }
  registerRequestLog(app, log);
  // The operator audit log's write path (and its boot check: every state-changing route declares @Audited/@NotAudited).
  registerOperatorAudit(app, log);
  app.useGlobalFilters(new EnvelopeExceptionFilter(log));
  app.useGlobalPipes(createValidationPipe());

  if (!config.roles.has('api')) return app; // ops endpoints only: no API to document
  const doc = buildOpenApiDocument(app);
  // For the e2e response validator (test/support/http.ts), which may not fetch /docs-json when AUTH is on.
  fastify.decorate('sluiceOpenApi', doc);
  SwaggerModule.setup('docs', app, doc, { jsonDocumentUrl: 'docs-json' });
  return app;
}
