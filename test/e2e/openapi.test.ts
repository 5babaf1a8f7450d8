import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import type { OpenAPIObject } from '@nestjs/swagger';
import { routeTable } from '../../src/http/route-table';
import { startTestApi, validatorFor, type TestApi } from '../support/http';
import { OpenApiValidator } from '../support/openapi-validator';

/**
 * The OpenAPI document is the truth: Redocly's `recommended` rules pass, every
 * operation is complete (operationId, typed answers, the error envelope), and
 * a client generated from it (openapi-typescript) gets usable types. Every
 * response the e2e suite receives is validated against it
 * (test/support/openapi-validator.ts); the last tests show that validator
 * refuses what it should.
 */
let api: TestApi;
let doc: OpenAPIObject;
type Op = { operationId: string; security?: unknown[]; responses: Record<string, { $ref?: string; content?: Record<string, { schema?: { $ref?: string } }>; headers?: Record<string, unknown> }>; requestBody?: unknown };
const METHODS = ['get', 'put', 'post', 'delete', 'patch'] as const;

function operations(): { method: string; path: string; op: Op }[] {
  const out: { method: string; path: string; op: Op }[] = [];
  for (const [path, item] of Object.entries(doc.paths)) {
    for (const method of METHODS) {
      const op = (item as Record<string, Op | undefined>)[method];
      if (op) out.push({ method, path, op });
    }
  }
  return out;
}

/** Runs a helper script of test/support with the document on stdin. */
function runScript(script: string): string {
  return execFileSync(process.execPath, [join(__dirname, '../support', script)], { input: JSON.stringify(doc), encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 });
}

beforeAll(async () => {
  api = await startTestApi('openapi');
  const res = await api.http.get('/docs-json');
  expect(res.status).toBe(200);
  doc = res.body as OpenAPIObject;
});
afterAll(() => api?.close());

test('the served document is the one the response validator uses', () => {
  const inProcess = (api.app.getHttpAdapter().getInstance() as unknown as { sluiceOpenApi: OpenAPIObject }).sluiceOpenApi;
  expect(doc).toEqual(JSON.parse(JSON.stringify(inProcess)));
});

test("Redocly's recommended ruleset reports no error and no warning", () => {
  const problems = JSON.parse(runScript('openapi-lint.mjs')) as { ruleId: string; severity: string; message: string; location: string }[];
  // Listed in full on failure: ruleId, where, why.
  expect(problems.map((p) => `${p.severity} ${p.ruleId} ${p.location}: ${p.message}`)).toEqual([]);
});

/** The browser routes, outside the document (its info.description names them): two redirects to the console, and the console's files. */
const BROWSER_ROUTES = ['GET /', 'GET /dashboard', 'GET /ui', 'GET /ui/*'];

test('every route of the app is documented except the browser routes (redirects, console files), with a camelCase operationId', () => {
  const documented = new Set(operations().map((o) => `${o.method.toUpperCase()} ${o.path}`));
  const routes = routeTable(api.app).map((r) => `${r.method} ${r.path.replace(/:([A-Za-z0-9_]+)/g, '{$1}')}`);
  // Exactly these are left out: a new route without @ApiOperation fails here.
  expect(routes.filter((r) => !documented.has(r)).sort()).toEqual([...BROWSER_ROUTES].sort());
  expect(doc.info.description).toMatch(/`GET \/` and `GET \/dashboard` redirect \(302\) to the operator console, whose files `GET \/ui\/…` serves/);
  const ids = operations().map((o) => o.op.operationId);
  expect(ids.filter((id) => !/^[a-z][A-Za-z]+$/.test(id))).toEqual([]);
  expect(new Set(ids).size).toBe(ids.length);
});

test('every operation has a 2xx answer with a schema; every error answer is the envelope; every answer carries X-Request-Id', () => {
  const problems: string[] = [];
  const resolve = (r: Op['responses'][string]) => (r.$ref ? (doc.components!.responses![r.$ref.split('/').pop()!] as Op['responses'][string]) : r);
  for (const { method, path, op } of operations()) {
    const where = `${method.toUpperCase()} ${path}`;
    const ok = Object.entries(op.responses).filter(([s]) => /^2/.test(s));
    if (!ok.length) problems.push(`${where}: no 2xx answer`);
    for (const [status, r] of ok) if (!Object.values(resolve(r).content ?? {}).some((m) => m.schema)) problems.push(`${where} ${status}: no schema`);
    for (const [status, raw] of Object.entries(op.responses)) {
      const r = resolve(raw);
      if (!r.headers?.['X-Request-Id']) problems.push(`${where} ${status}: no X-Request-Id header`);
      if (/^[45]/.test(status) && r.content?.['application/json']?.schema?.$ref !== '#/components/schemas/Error') problems.push(`${where} ${status}: not the error envelope`);
    }
    for (const s of ['403', '503']) if (!op.responses[s] && !(s === '503' && path === '/healthz')) problems.push(`${where}: no ${s}`);
    if (op.requestBody && !op.responses['400']) problems.push(`${where}: a body but no 400`);
    if (op.requestBody && !op.responses['415']) problems.push(`${where}: a body but no 415`);
    if (path.includes('{') && !op.responses['404']) problems.push(`${where}: a path parameter but no 404`);
  }
  expect(problems).toEqual([]);
});

test('security follows each route\'s @Access: public routes need none, the others an API key or the session cookie, may answer 401 and take X-Sluice-Project', () => {
  const access = new Map(routeTable(api.app).map((r) => [`${r.method.toLowerCase()} ${r.path.replace(/:([A-Za-z0-9_]+)/g, '{$1}')}`, r.required ?? []]));
  for (const { method, path, op } of operations()) {
    const req = access.get(`${method} ${path}`)!;
    if (req.includes('public')) {
      expect([`${method} ${path}`, op.security]).toEqual([`${method} ${path}`, []]);
      // No credentials asked, so not the shared 401 (a login's own 401, wrong password, is route-specific).
      expect(op.responses['401']).not.toEqual({ $ref: '#/components/responses/Unauthorized' });
    } else {
      expect(op.responses['401']).toEqual({ $ref: '#/components/responses/Unauthorized' });
      expect(op.security).toEqual(req.includes('metrics') ? [{}, { metricsToken: [] }] : [{ apiKey: [] }, { sessionCookie: [] }]);
    }
    const takesProject = ((op as { parameters?: { $ref?: string }[] }).parameters ?? []).some((p) => p.$ref === '#/components/parameters/Project');
    expect([`${method} ${path}`, takesProject]).toEqual([`${method} ${path}`, !req.includes('public') && !req.includes('metrics')]);
  }
  expect(doc.components!.securitySchemes).toMatchObject({ apiKey: { type: 'http', scheme: 'bearer' }, sessionCookie: { type: 'apiKey', in: 'cookie', name: 'sluice_session' } });
  expect(doc.components!.parameters!.Project).toMatchObject({ name: 'X-Sluice-Project', in: 'header', required: false });
});

test('the statuses of API.md are documented where they apply (201/200 replay, 202, 409, 409 lease_lost, 429 with Retry-After)', () => {
  const op = (path: string, method: string) => (doc.paths[path] as Record<string, Op>)[method];
  const enqueue = op('/jobs', 'post');
  expect(Object.keys(enqueue.responses)).toEqual(expect.arrayContaining(['200', '201', '400', '409', '413', '415', '429', '503']));
  expect(enqueue.responses['200'].headers).toHaveProperty('Idempotent-Replayed');
  expect(Object.keys(op('/jobs/{id}', 'delete').responses)).toEqual(expect.arrayContaining(['200', '202', '404', '409']));
  for (const p of ['/jobs/{id}/heartbeat', '/jobs/{id}/complete', '/jobs/{id}/fail']) expect(JSON.stringify(op(p, 'post').responses['409'])).toMatch(/lease_lost/);
  const login = op('/auth/login', 'post').responses['200'] as { headers: Record<string, { $ref?: string }> };
  expect(login.headers['Set-Cookie']).toEqual({ $ref: '#/components/headers/Set-Cookie' });
  expect(Object.keys(op('/auth/login', 'post').responses)).toEqual(expect.arrayContaining(['200', '400', '401', '429']));
  expect(Object.keys(op('/users', 'post').responses)).toEqual(expect.arrayContaining(['201', '400', '401', '403', '409']));
  const limited = doc.components!.responses!.TooManyRequests as { headers: Record<string, { required?: boolean }> };
  expect(limited.headers['Retry-After'].required).toBe(true);
  expect((doc.components!.schemas!.Error as { properties: { error: { properties: { code: { enum: string[] } } } } }).properties.error.properties.code.enum).toEqual(
    expect.arrayContaining(['validation_failed', 'unauthorized', 'forbidden', 'not_found', 'conflict', 'lease_lost', 'payload_too_large', 'unsupported_media_type', 'rate_limited', 'unavailable', 'internal']),
  );
  // The HTTP layer's answers, with the codes the server sends (src/http/error-envelope.ts), on every operation; 400 too
  // (a path parameter with a NUL, a malformed URL, a request Node's parser refuses).
  const example = (name: string) => (doc.components!.responses![name] as { content: Record<string, { example: { error: { code: string } } }> }).content['application/json'].example.error.code;
  expect([example('RequestTimeout'), example('UriTooLong'), example('HeadersTooLarge')]).toEqual(['request_timeout', 'uri_too_long', 'headers_too_large']);
  for (const { method, path, op } of operations()) expect([method, path, ['400', '408', '414', '431'].filter((s) => !op.responses[s])]).toEqual([method, path, []]);
});

test('GET /auth/session with AUTH off answers the documented anonymous shape (validated like every answer here)', async () => {
  const res = await api.http.get('/auth/session');
  expect(res.status).toBe(200);
  expect(res.body).toEqual({
    kind: 'anonymous', user: null, keyId: null, project: 'default', role: 'admin', expiresAt: null,
    org: 'default', hidePayloads: false, projects: [{ name: 'default', org: 'default', role: 'admin' }], orgs: [],
  });
});

test('a client generated with openapi-typescript gets typed answers, optional defaulted fields and free JSON as unknown', () => {
  const ts = runScript('openapi-types.mjs');
  const block = (name: string) => {
    const start = ts.indexOf(`        ${name}: {`);
    expect(start).toBeGreaterThan(-1);
    return ts.slice(start, ts.indexOf('\n        };', start));
  };
  const enqueue = block('EnqueueJobDto');
  for (const field of ['payload', 'queue', 'priority', 'delayMs', 'maxAttempts', 'backoff', 'timeoutMs', 'idempotencyKey']) expect(enqueue).toMatch(new RegExp(`\\n {12}${field}\\?:`));
  expect(enqueue).toMatch(/\n {12}type: string;/);
  const job = block('Job');
  expect(job).toMatch(/\n {12}result: unknown;/);
  expect(job).toMatch(/\n {12}progress: unknown;/);
  expect(job).toMatch(/\n {12}startedAt: string \| null;/);
  expect(block('CompleteDto')).toMatch(/\n {12}result\?: unknown;/);
  // An object schema without properties would be `Record<string, never>` (unusable): only the empty webhooks/$defs are.
  expect(ts.split('\n').filter((l) => l.includes('Record<string, never>') && !/^export type (webhooks|\$defs) =/.test(l))).toEqual([]);
  // Every operation's 2xx answers have a typed body: no `content?: never` under a 2xx status.
  expect(ts).not.toMatch(/\n {12}2\d\d: \{\n {16}headers: \{[^}]*\};\n {16}content\?: never;/);
});

describe('the response validator refuses what does not match the document', () => {
  let v: OpenApiValidator;
  const job = async () => (await api.http.post('/jobs').send({ type: 'diag.echo' })).body as Record<string, unknown>;
  beforeAll(() => {
    v = validatorFor(api.app)!;
  });
  const headers = { 'content-type': 'application/json; charset=utf-8', 'x-request-id': 'r1' };

  test('a real answer passes', async () => {
    expect(v.check('GET', '/jobs/x', { status: 200, headers, body: await job() })).toBeNull();
  });

  test('a missing field, a wrong type, a float where an integer is due, or an undocumented field fails, naming the path', async () => {
    const j = await job();
    const { queue, ...noQueue } = j;
    expect(queue).toBe('default');
    expect(v.check('GET', '/jobs/x', { status: 200, headers, body: noQueue })).toMatch(/GET \/jobs\/x → 200: .*getJob[\s\S]*must have required property 'queue'/);
    expect(v.check('GET', '/jobs/x', { status: 200, headers, body: { ...j, attempts: 1.5 } })).toMatch(/\/attempts must be integer/);
    expect(v.check('GET', '/jobs/x', { status: 200, headers, body: { ...j, status: 'sleeping' } })).toMatch(/\/status must be equal to one of the allowed values/);
    expect(v.check('GET', '/jobs/x', { status: 200, headers, body: { ...j, secret: 1 } })).toMatch(/must NOT have additional properties/);
  });

  test('an undocumented status or route, a missing X-Request-Id, or an error off the envelope fails', () => {
    const err = { error: { code: 'conflict', message: 'm', details: [], requestId: 'r1' } };
    expect(v.check('GET', '/jobs/x', { status: 418, headers, body: err })).toMatch(/status 418 is not documented for getJob/);
    expect(v.check('GET', '/jobs/x', { status: 404, headers: { 'content-type': 'application/json' }, body: err })).toMatch(/header X-Request-Id is missing/);
    expect(v.check('GET', '/jobs/x', { status: 404, headers, body: { message: 'no' } })).toMatch(/must have required property 'error'/);
    expect(v.check('GET', '/jobs/x', { status: 404, headers, body: { error: { ...err.error, code: 'nope' } } })).toMatch(/code must be equal to one of the allowed values/);
    expect(v.check('PUT', '/jobs/x', { status: 200, headers, body: {} })).toMatch(/no documented operation for PUT \/jobs\/x/);
    // An unknown route answering the envelope with 404 is fine.
    expect(v.check('GET', '/no/such/route', { status: 404, headers, body: err })).toBeNull();
  });
});
