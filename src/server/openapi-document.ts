import type { INestApplication } from '@nestjs/common';
import { DocumentBuilder, SwaggerModule, type OpenAPIObject } from '@nestjs/swagger';
import type { OperationObject, ParameterObject, ResponseObject, SchemaObject } from '@nestjs/swagger/dist/interfaces/open-api-spec.interface';
import type { Requirement } from '../core/access';
import { routeTable } from '../http/route-table';
import { SESSION_COOKIE } from '../auth/session-cookie';
import { headerRef, JSON_MARKER, schemaRef } from '../http/openapi/decorators';
import { CODE_BY_STATUS } from '../http/error-envelope';
import { RESPONSE_SCHEMAS } from '../http/openapi/schemas';

/**
 * Answers any route may give, added to each operation that can give them (see
 * {@link completeDocument}); each one's envelope code is the server's own for
 * that status (src/http/error-envelope.ts CODE_BY_STATUS).
 */
const COMMON: Record<string, { status: number; description: string; retryAfter?: 'required' | 'optional' }> = {
  BadRequest: {
    status: 400,
    description:
      'Bad request: a body, query or path field fails validation (`details` lists `{path, message}` per field; a NUL or lone surrogate in any string, an invalid name), the body is not JSON, ' +
      "a path segment is not valid percent-encoded UTF-8, or Node's HTTP parser refused the request (a bad header or chunk).",
  },
  Unauthorized: { status: 401, description: 'AUTH is on and the request carries no valid credentials (missing, unknown, revoked or expired key).' },
  Forbidden: { status: 403, description: "The key's role may not do this; or a state-changing request from a foreign Origin; or, with AUTH off, a Host that is not allowed." },
  NotFound: { status: 404, description: 'Unknown id or name (another project’s too); or a project that does not exist (`X-Sluice-Project` of a root key).' },
  RequestTimeout: { status: 408, description: 'The request (headers within HTTP_HEADERS_TIMEOUT_MS, all of it within HTTP_REQUEST_TIMEOUT_MS) was not received in time; the socket is closed.' },
  PayloadTooLarge: { status: 413, description: 'The body (or a payload) is over MAX_PAYLOAD_BYTES.' },
  UriTooLong: { status: 414, description: 'A path segment (an id, a name or a key) is longer than 256 characters (after percent-decoding).' },
  UnsupportedMediaType: { status: 415, description: 'A body with another Content-Type than application/json.' },
  TooManyRequests: { status: 429, description: 'Rate limited (API_RATE_LIMIT_MAX per window); retry after `Retry-After` seconds.', retryAfter: 'required' },
  HeadersTooLarge: { status: 431, description: 'The request line and headers are over 16 KiB; the socket is closed.' },
  Unavailable: { status: 503, description: 'Redis or PostgreSQL is unreachable, or the audit backlog is over its bound (load shedding); retry later.', retryAfter: 'optional' },
};

const HEADERS = {
  'X-Request-Id': { description: 'The request id: echoed when the client sent a printable one (1..200 characters), else generated. On every response.', required: true, schema: { type: 'string' } },
  'Retry-After': { description: 'Seconds to wait before retrying.', schema: { type: 'integer', minimum: 1 } },
  // Not required: the enqueue's 200 answers either a replay (this header) or a debounce (Sluice-Debounced).
  'Idempotent-Replayed': { description: '`true`: the idempotency key matched an existing job (POST /jobs) or flow (POST /flows) with the same body; this is it.', required: false, schema: { type: 'string', enum: ['true'] } },
  'Preference-Applied': {
    description: '`return=minimal` (RFC 7240, API.md v1.3): the request asked `Prefer: return=minimal` and each job in the answer is `{id, status}`.',
    required: false,
    schema: { type: 'string', enum: ['return=minimal'] },
  },
  'Sluice-Debounced': {
    description: '`true` (API.md v1.2): the debounce key matched a job of the queue not claimed yet; this is that job, updated (payload, options, runAt).',
    required: false,
    schema: { type: 'string', enum: ['true'] },
  },
  'Set-Cookie': {
    description: `The dashboard session cookie \`${SESSION_COOKIE}\`: HttpOnly, SameSite=Strict, Path=/, Max-Age = the session's absolute lifetime (0 and an empty value clear it), Secure over TLS.`,
    required: true,
    schema: { type: 'string', example: `${SESSION_COOKIE}=…; Path=/; HttpOnly; SameSite=Strict; Max-Age=43200` },
  },
};

/** The root key's project header (src/auth/auth.guard.ts PROJECT_HEADER), a parameter of every route that takes credentials. */
const PROJECT_PARAMETER = {
  name: 'X-Sluice-Project',
  in: 'header',
  required: false,
  description: 'Root keys only: the project to act in (default `default`); ignored for other keys and sessions. A project that does not exist → 404.',
  schema: { type: 'string', example: 'default' },
};

/** Who may call a route that takes credentials: an API key, or the dashboard's session cookie (either). */
const credentials = (): Record<string, string[]>[] => [{ apiKey: [] }, { sessionCookie: [] }];

const TAGS: [string, string][] = [
  ['jobs', 'Enqueue, read, list and cancel jobs; their events, executions and logs.'],
  ['dead-letter queue', 'Jobs in status failed: list, retry, purge.'],
  ['queues', 'Queue settings, pause and resume, exact counts.'],
  ['external workers', 'The lease protocol for workers in any language: claim, heartbeat, complete, fail.'],
  ['schedules', 'Cron schedules (each slot enqueued at most once).'],
  ['workers', 'Registered worker processes.'],
  ['dashboard', 'Aggregates for the web dashboard.'],
  ['keys', 'API keys of your project (admin).'],
  ['users', 'Dashboard users of your project (admin): never a password or its hash.'],
  ['auth', 'Dashboard sign-in: the session cookie, and who a request acts as.'],
  ['audit log', 'Operator actions of your project (admin).'],
  ['ops', 'Liveness, readiness and metrics: served by every process.'],
];

/** Paths exempt from the rate limit (src/server/http-app.ts OPS_PATHS). */
const UNLIMITED = /^\/(healthz|readyz|metrics)$/;
const BODY_METHODS = new Set(['post', 'put', 'patch', 'delete']);

/**
 * Builds the OpenAPI document served at `/docs-json`: Nest's document from
 * the controllers and request DTOs, completed by {@link completeDocument}.
 */
export function buildOpenApiDocument(app: INestApplication): OpenAPIObject {
  const builder = new DocumentBuilder()
    .setTitle('Sluice')
    .setDescription(
      'Distributed job queue: Redis hot path, PostgreSQL history. The contract is API.md (v1.1); this document is generated from the same code. ' +
        'Every non-2xx answer carries the error envelope `{error: {code, message, details, requestId}}` and every answer the `X-Request-Id` header. ' +
        'Response objects may gain fields in later versions (add, never rename): clients must ignore fields they do not know. ' +
        'Browser routes are not operations of this document: `GET /` and `GET /dashboard` redirect (302) to the operator console, whose files `GET /ui/…` serves, and `GET /docs` is Swagger UI.',
    )
    .setVersion('1.1')
    .setLicense('MIT', 'https://opensource.org/licenses/MIT')
    .addServer('/', 'The server that serves this document')
    .addBearerAuth({ type: 'http', scheme: 'bearer', description: 'An API key (`sk_…`, POST /keys or SLUICE_BOOTSTRAP_ADMIN_KEY). Needed when AUTH is on.' }, 'apiKey')
    .addSecurity('sessionCookie', {
      type: 'apiKey',
      in: 'cookie',
      name: SESSION_COOKIE,
      description:
        'The dashboard session (POST /auth/login sets it), used when the request has no `Authorization` header. A state-changing request (POST, PUT, PATCH, DELETE) with it must also carry `Origin` or `Sec-Fetch-Site: same-origin` (403 otherwise).',
    })
    .addBearerAuth({ type: 'http', scheme: 'bearer', description: 'METRICS_TOKEN, when it is set.' }, 'metricsToken');
  for (const [name, description] of TAGS) builder.addTag(name, description);
  const doc = SwaggerModule.createDocument(app, builder.build(), {
    // A route without an explicit operationId gets `<method><Controller>`, e.g. listKeys.
    operationIdFactory: (controller, method) => method + controller.replace(/Controller$/, ''),
  });
  const access = new Map(routeTable(app).map((r) => [`${r.method.toLowerCase()} ${r.path.replace(/:([A-Za-z0-9_]+)/g, '{$1}')}`, r.required ?? []]));
  return completeDocument(doc, (method, path) => access.get(`${method} ${path}`) ?? []);
}

/**
 * Completes Nest's document in place, from each route's declaration rather
 * than per-route boilerplate:
 * - components: the response schemas, the common error answers, the headers;
 * - `security` per operation from its `@Access` (public: none; metrics: optional METRICS_TOKEN; else an API key
 *   or the session cookie), and the optional `X-Sluice-Project` header of root keys where credentials are taken;
 * - the common error answers each operation can give: 400 everywhere (a body, query or path
 *   field, a malformed URL, or a request Node's parser refuses); 401 unless public; 403
 *   (roles, cross-site, Host); 404 with a path parameter or credentials (an unknown project);
 *   413/415 for methods that take a body; 429 unless exempt from the rate limit; 503 except
 *   /healthz; 408/414/431 (the HTTP server's limits);
 * - `X-Request-Id` on every answer;
 * - request schemas: "any JSON" markers become the empty schema (no `type`, no `nullable`), and a `default`
 *   moves into the description (openapi-typescript would make a defaulted
 *   field required in the generated client; the server fills it in).
 * `requirementOf` answers the route's `@Access` requirements (empty when unknown).
 */
export function completeDocument(doc: OpenAPIObject, requirementOf: (method: string, path: string) => readonly Requirement[]): OpenAPIObject {
  const components = (doc.components ??= {});
  const requestSchemas = components.schemas ?? {};
  for (const s of Object.values(requestSchemas)) fixRequestSchema(s as SchemaObject);
  components.schemas = { ...requestSchemas, ...RESPONSE_SCHEMAS };
  components.headers = { ...HEADERS } as typeof components.headers;
  components.parameters = { Project: PROJECT_PARAMETER } as typeof components.parameters;
  components.responses = {};
  for (const [name, c] of Object.entries(COMMON)) {
    const headers: Record<string, unknown> = { 'X-Request-Id': headerRef('X-Request-Id') };
    if (c.retryAfter) headers['Retry-After'] = c.retryAfter === 'required' ? { ...HEADERS['Retry-After'], required: true } : headerRef('Retry-After');
    components.responses[name] = {
      description: c.description,
      headers,
      content: { 'application/json': { schema: schemaRef('Error'), example: { error: { code: CODE_BY_STATUS[c.status], message: c.description.split(/[.;:]/)[0], details: [], requestId: 'b7f3c1d2-4e5f-4a6b-8c7d-9e0f1a2b3c4d' } } } },
    } as ResponseObject;
  }
  doc.security = credentials();

  for (const [path, item] of Object.entries(doc.paths)) {
    for (const method of ['get', 'put', 'post', 'delete', 'patch'] as const) {
      const op = item[method] as OperationObject | undefined;
      if (!op) continue;
      const req = requirementOf(method, path);
      const isPublic = req.includes('public');
      const isMetrics = req.includes('metrics');
      const takesCredentials = !isPublic && !isMetrics;
      op.security = isPublic ? [] : isMetrics ? [{}, { metricsToken: [] }] : credentials();
      const params = (op.parameters ?? []) as ParameterObject[];
      if (takesCredentials) op.parameters = [...params, { $ref: '#/components/parameters/Project' }];
      for (const p of params) if (p.schema) fixRequestSchema(p.schema as SchemaObject);
      if (op.requestBody && 'content' in op.requestBody) {
        for (const media of Object.values(op.requestBody.content)) if (media.schema) fixRequestSchema(media.schema as SchemaObject);
      }
      const common: string[] = [];
      // Any request can be refused by Node's parser (bad header, bad chunk), and any field of a body, query or path
      // validated (NUL, lone surrogates, names): 400 on every route, as 408/431 (src/server/client-error.ts).
      common.push('BadRequest');
      if (!isPublic) common.push('Unauthorized');
      common.push('Forbidden');
      if (path.includes('{') || takesCredentials) common.push('NotFound');
      common.push('RequestTimeout');
      if (BODY_METHODS.has(method)) common.push('PayloadTooLarge', 'UnsupportedMediaType');
      common.push('UriTooLong');
      if (!UNLIMITED.test(path)) common.push('TooManyRequests');
      common.push('HeadersTooLarge');
      if (path !== '/healthz') common.push('Unavailable');
      for (const name of common) {
        const status = String(COMMON[name].status);
        if (!op.responses[status]) op.responses[status] = { $ref: `#/components/responses/${name}` };
      }
      for (const r of Object.values(op.responses) as (ResponseObject | { $ref: string })[]) {
        if ('$ref' in r) continue;
        r.headers = { 'X-Request-Id': headerRef('X-Request-Id'), ...(r.headers ?? {}) };
        if (!r.description) r.description = 'OK';
      }
      op.responses = Object.fromEntries(Object.entries(op.responses).sort(([a], [b]) => a.localeCompare(b)));
    }
  }
  return doc;
}

/** Request-side schema fixes, recursively (see {@link completeDocument}). */
function fixRequestSchema(s: SchemaObject): void {
  if (!s || typeof s !== 'object') return;
  const any = s as Record<string, unknown>;
  if (any[JSON_MARKER]) {
    delete any[JSON_MARKER];
    delete any.type;
    // The empty schema admits null already; OpenAPI 3.0's `nullable` only means something next to a `type`
    // (the server's null rule reads the decorator's metadata, not this document; the description says "null included").
    delete any.nullable;
  }
  if ('default' in s && s.default !== undefined) {
    const shown = JSON.stringify(s.default);
    s.description = s.description ? `${s.description} (default ${shown})` : `Default ${shown}.`;
    delete s.default;
  }
  for (const child of Object.values(s.properties ?? {})) fixRequestSchema(child as SchemaObject);
  if (s.items) fixRequestSchema(s.items as SchemaObject);
  for (const k of ['oneOf', 'anyOf', 'allOf'] as const) for (const c of s[k] ?? []) fixRequestSchema(c as SchemaObject);
}
