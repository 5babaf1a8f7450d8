import { randomBytes } from 'node:crypto';
import fc from 'fast-check';
import type { OpenAPIObject } from '@nestjs/swagger';
import { ROLES } from '../../src/core/access';
import { startTestApi, type TestApi } from '../support/http';
import { waitUntil } from '../support/timing';

/**
 * Hostile input on EVERY route of the live router (API.md v1.2 "Security rules
 * made exact"; issue 18). The routes come from the router itself (Fastify's
 * `onRoute` list), their query parameters and body fields from the OpenAPI
 * document built from the same controllers and DTOs: a route added tomorrow is
 * covered the day it is added, with nothing to list here.
 *
 * Each path parameter, query parameter and body field gets, one at a time,
 * NUL, lone surrogates, huge and deep values, wrong types, names that break the
 * naming rules and prototype keys; each route gets bodies of the wrong shape,
 * and bodies where it takes none. The credentials rotate over none, each role's
 * key, a root key and a session cookie, so every route meets each. Then a
 * fast-check property sends random mixes (several slots hostile at once).
 * Every answer must be < 500 and, when ≥ 400, the API.md error envelope with
 * its X-Request-Id. AFTERWARDS the writers still flow: an operator action is in
 * GET /audit-log and a job enqueued after the barrage has its events in
 * GET /jobs/:id/events (history mirror).
 *
 * Seeded: HOSTILE_SEED (printed at the start; default: the clock) reproduces a
 * run exactly; HOSTILE_RUNS bounds the property phase (default 300).
 * This file sits beside hostile-input.test.ts (parser- and protocol-level
 * cases, hand-picked) and fuzz.test.ts (random bodies for POST /jobs).
 */
const SEED = Number(process.env.HOSTILE_SEED ?? Date.now() % 2 ** 31);
const RUNS = Number(process.env.HOSTILE_RUNS ?? 300);
const ROOT = 'sk_' + randomBytes(32).toString('base64url');
const UUID = '0190f5a0-0000-7000-8000-000000000001';

let api: TestApi;
type Cred = { name: string; headers: Record<string, string> };
const creds: Cred[] = [];

interface Route {
  method: string;
  /** Fastify form, `/jobs/:id`. */
  path: string;
  params: string[];
  query: string[];
  /** Body fields (top level) when the route takes a body; null when it takes none. */
  body: string[] | null;
}
let routes: Route[] = [];

beforeAll(async () => {
  process.stdout.write(`hostile-routes: HOSTILE_SEED=${SEED} HOSTILE_RUNS=${RUNS}\n`);
  api = await startTestApi('hostile-routes', { AUTH: 'on', SLUICE_BOOTSTRAP_ADMIN_KEY: ROOT, ROLE: 'all' });
  const rootH = { authorization: `Bearer ${ROOT}` };
  creds.push({ name: 'none', headers: {} }, { name: 'root', headers: rootH });
  for (const role of ROLES) {
    const r = await api.http.post('/keys').set(rootH).send({ name: `hostile-${role}`, role });
    expect(r.status).toBe(201);
    creds.push({ name: role, headers: { authorization: `Bearer ${r.body.secret}` } });
  }
  const password = randomBytes(12).toString('base64url');
  expect((await api.http.post('/users').set(rootH).send({ username: 'hostile-op', password, role: 'operator' })).status).toBe(201);
  const login = await api.http.post('/auth/login').send({ username: 'hostile-op', password });
  expect(login.status).toBe(200);
  const cookie = /sluice_session=[^;]+/.exec(String(login.headers['set-cookie']))![0];
  creds.push({ name: 'session', headers: { cookie, origin: api.url } });
  routes = liveRoutes(api);
}, 60_000);
afterAll(() => api?.close());

/** Every route of the live router (no HEAD, no Swagger UI), with its query parameters and body fields from the OpenAPI document. */
function liveRoutes(t: TestApi): Route[] {
  const fastify = t.app.getHttpAdapter().getInstance() as unknown as { sluiceRoutes: { method: string; url: string }[]; sluiceOpenApi: OpenAPIObject };
  const doc = fastify.sluiceOpenApi;
  const seen = new Set<string>();
  const out: Route[] = [];
  for (const r of fastify.sluiceRoutes) {
    if (r.method === 'HEAD' || /^\/docs/.test(r.url) || seen.has(`${r.method} ${r.url}`)) continue;
    seen.add(`${r.method} ${r.url}`);
    const op = (doc.paths[r.url.replace(/:(\w+)/g, '{$1}')] as Record<string, any> | undefined)?.[r.method.toLowerCase()];
    const query = ((op?.parameters ?? []) as { in: string; name: string }[]).filter((p) => p.in === 'query').map((p) => p.name);
    let body: string[] | null = null;
    const schema = op?.requestBody?.content?.['application/json']?.schema;
    if (schema) {
      const resolved = schema.$ref ? (doc.components!.schemas as Record<string, any>)[schema.$ref.split('/').pop()] : schema;
      body = Object.keys(resolved?.properties ?? {});
    }
    const params = [...r.url.matchAll(/:(\w+)|\*/g)].map((m) => m[1] ?? '*');
    out.push({ method: r.method, path: r.url, params, query, body });
  }
  return out;
}

// ---- hostile values, by class (fast-check arbitraries) ----
const text = fc.string({ maxLength: 6 });
const NAMES_BROKEN = ['Q', '-x', 'a/b', "' OR 1=1--", '..', 'a b', 'é', '__proto__', 'constructor', 'prototype', 'x'.repeat(65), '%', '*', '', ' ', '\t', 'a\nb', '<script>'];
const STRING_CLASSES: Record<string, fc.Arbitrary<string>> = {
  nul: fc.tuple(text, text).map(([a, b]) => `${a}\u0000${b}`),
  surrogate: fc.tuple(text, fc.constantFrom('\ud800', '\udbff', '\udc00', '\udfff', '\ud83d')).map(([a, s]) => `${a}${s}`),
  huge: fc.integer({ min: 300, max: 6000 }).map((n) => 'x'.repeat(n)),
  deep: fc.integer({ min: 65, max: 300 }).map((n) => '['.repeat(n) + ']'.repeat(n)),
  wrongType: fc.constantFrom('true', 'null', '[]', '{}', '-1', '1.5', '1e308', '0x10', '1e1', '0b11', 'NaN', 'Infinity', '-0'),
  badName: fc.constantFrom(...NAMES_BROKEN),
  json: fc.constantFrom('{"a":"\\u0000"}', '{"\\ud800":1}', '{"__proto__":{"x":1}}', '{"constructor":{"prototype":{"x":1}}}', '{"a":' + '['.repeat(70) + ']'.repeat(70) + '}', '[1,2]', '{'),
};
const deepValue = (n: number): unknown => {
  let v: unknown = 1;
  for (let i = 0; i < n; i++) v = i % 2 ? { d: v } : [v];
  return v;
};
const VALUE_CLASSES: Record<string, fc.Arbitrary<unknown>> = {
  nul: STRING_CLASSES.nul,
  surrogate: STRING_CLASSES.surrogate,
  huge: fc.oneof(
    fc.integer({ min: 10_000, max: 200_000 }).map((n) => 'x'.repeat(n)),
    fc.integer({ min: 1000, max: 20_000 }).map((n) => Array.from({ length: n }, (_, i) => i)),
  ),
  deep: fc.integer({ min: 65, max: 200 }).map(deepValue),
  wrongType: fc.constantFrom<unknown>(null, true, false, 0, -1, 1.5, 1e308, -1e308, 2 ** 53 + 2, '', [], {}, [null], { a: null }, '1', 'true'),
  badName: fc.constantFrom<unknown>(...NAMES_BROKEN),
  protoKey: fc.constantFrom<unknown>(JSON.parse('{"__proto__":{"polluted":1}}'), { constructor: { prototype: { polluted: 1 } } }, JSON.parse('{"a":{"__proto__":1}}')),
};
/** Whole bodies: wrong shapes for a route that takes one, any body at all for a route that takes none. */
const BODIES = fc.constantFrom(
  '[1,2]',
  '"x"',
  '1',
  'null',
  '{"payload":{"a":1}}',
  '{"__proto__":{"polluted":true}}',
  '{"a\\u0000":1}',
  '{"\\udc00":1}',
  '{"a":' + '['.repeat(80) + ']'.repeat(80) + '}',
  '{"x":"' + 'y'.repeat(600_000) + '"}',
  '{',
  '{"a":1,"a":2}',
);

/** A string as a URL component: lone surrogates as the (invalid) UTF-8 bytes a client could send. */
function enc(s: string): string {
  let out = '';
  for (const ch of s) {
    const c = ch.charCodeAt(0);
    if (ch.length === 1 && c >= 0xd800 && c <= 0xdfff) out += [0xe0 | (c >> 12), 0x80 | ((c >> 6) & 0x3f), 0x80 | (c & 0x3f)].map((b) => `%${b.toString(16).toUpperCase()}`).join('');
    else out += encodeURIComponent(ch);
  }
  return out;
}

/** One request: the route, which slots are hostile and with what, which credentials. */
interface Case {
  route: Route;
  params: Record<string, string>;
  query: [string, string][];
  body: string | undefined;
  cred: Cred;
  label: string;
}

function baseParam(name: string): string {
  return name === 'id' ? UUID : name === '*' ? 'index.html' : 'hostile-q';
}

function url(c: Case): string {
  let u = c.route.path;
  for (const p of c.route.params) {
    const v = enc(c.params[p] ?? baseParam(p));
    u = p === '*' ? u.replace('*', v) : u.replace(`:${p}`, v);
  }
  const qs = c.query.map(([k, v]) => `${enc(k)}=${enc(v)}`).join('&');
  return api.url + u + (qs ? `?${qs}` : '');
}

const problems: string[] = [];
const statuses = new Map<number, number>();

/** Sends a case; records a problem for a 5xx, a missing envelope or a hang. */
async function send(c: Case): Promise<void> {
  const cred = c.route.path === '/auth/logout' && c.cred.name === 'session' ? creds[0] : c.cred;
  const headers: Record<string, string> = { ...cred.headers };
  let body: string | undefined;
  if (c.body !== undefined && c.route.method !== 'GET') {
    headers['content-type'] = 'application/json';
    body = c.body;
  }
  const where = `${c.route.method} ${c.route.path} [${c.label}; ${cred.name}] ${url(c).slice(api.url.length, api.url.length + 160)}`;
  let res: Response;
  try {
    res = await fetch(url(c), { method: c.route.method, headers, body, signal: AbortSignal.timeout(10_000), redirect: 'manual' });
  } catch (e) {
    // fetch refuses some URLs itself (e.g. one it cannot parse): the server never saw them.
    if (e instanceof TypeError && /URL|Invalid/i.test(String((e as Error).message) + String((e as { cause?: Error }).cause?.message))) return;
    problems.push(`${where}: ${(e as Error).name} ${(e as Error).message}`);
    return;
  }
  statuses.set(res.status, (statuses.get(res.status) ?? 0) + 1);
  if (res.status < 400) {
    await res.body?.cancel();
    return;
  }
  const text = await res.text();
  // A worktree without `npm run build` has no console to serve: that 503 is the environment's, not the input's.
  if (res.status === 503 && c.route.path.startsWith('/ui') && text.includes('console is not built')) return;
  if (res.status >= 500) {
    problems.push(`${where} → ${res.status}: ${text.slice(0, 200)}`);
    return;
  }
  let env: { error?: { code?: unknown; message?: unknown; requestId?: unknown } } | null = null;
  try {
    env = JSON.parse(text);
  } catch {
    /* checked below */
  }
  const e = env?.error;
  if (!e || typeof e.code !== 'string' || typeof e.message !== 'string' || typeof e.requestId !== 'string' || res.headers.get('x-request-id') !== e.requestId) {
    problems.push(`${where} → ${res.status} without the error envelope: ${text.slice(0, 200)}`);
  }
}

test('every route, every slot, every class of hostile value, every kind of credentials: never 5xx, always the envelope; the writers flow afterwards', async () => {
  const started = Date.now();
  expect(routes.length).toBeGreaterThan(35);
  // The sweep: each (route, slot, class) once; the value drawn by fast-check from the class, the credentials rotating.
  const cases: Omit<Case, 'cred'>[] = [];
  for (const route of routes) {
    // Names and wrong types are small lists of distinct cases: four draws each, one of every other class.
    for (const [cls, arb] of Object.entries(STRING_CLASSES).flatMap(([k, a]) => Array.from({ length: k === 'badName' || k === 'wrongType' ? 4 : 1 }, () => [k, a] as const))) {
      for (const p of route.params) cases.push({ route, params: { [p]: sampleOf(arb, cases.length) }, query: [], body: undefined, label: `param ${p}: ${cls}` });
      for (const q of route.query) cases.push({ route, params: {}, query: [[q, sampleOf(arb, cases.length)]], body: undefined, label: `query ${q}: ${cls}` });
      // A query parameter no route declares, named with the hostile value.
      cases.push({ route, params: {}, query: [[sampleOf(arb, cases.length), '1']], body: undefined, label: `query name: ${cls}` });
    }
    if (route.method === 'GET') continue;
    for (const f of route.body ?? []) {
      for (const [cls, arb] of Object.entries(VALUE_CLASSES)) {
        cases.push({ route, params: {}, query: [], body: JSON.stringify({ [f]: sampleOf(arb, cases.length) }), label: `body ${f}: ${cls}` });
      }
    }
    for (let i = 0; i < 4; i++) cases.push({ route, params: {}, query: [], body: sampleOf(BODIES, cases.length), label: route.body ? 'whole body' : 'body where none is taken' });
  }
  const offset = SEED % creds.length;
  const perRoute = new Map<Route, number>();
  for (const c of cases) {
    const n = perRoute.get(c.route) ?? 0;
    perRoute.set(c.route, n + 1);
    await send({ ...c, cred: creds[(n + offset) % creds.length] });
  }
  const swept = Date.now() - started;
  expect(problems).toEqual([]);

  // The property: random mixes, several slots hostile at once (fast-check shrinks a failure and prints its seed and path).
  const anyString = fc.oneof(...Object.values(STRING_CLASSES), fc.string({ maxLength: 8 }));
  const caseArb = fc
    .record({ r: fc.nat(routes.length - 1), cred: fc.nat(creds.length - 1), mask: fc.nat(7), strs: fc.array(anyString, { minLength: 8, maxLength: 8 }), body: fc.oneof(BODIES, fc.jsonValue({ maxDepth: 3 }).map((v) => JSON.stringify(v))) })
    .map(({ r, cred, mask, strs, body }) => {
      const route = routes[r];
      const params = Object.fromEntries(route.params.map((p, i) => [p, mask & 1 ? strs[i % 8] : baseParam(p)]));
      const query: [string, string][] = mask & 2 ? route.query.map((q, i) => [q, strs[(i + 3) % 8]]) : [];
      return { route, params, query, body: mask & 4 ? body : undefined, cred: creds[cred], label: 'property' } as Case;
    });
  await fc.assert(
    fc.asyncProperty(caseArb, async (c) => {
      const before = problems.length;
      await send(c);
      if (problems.length > before) throw new Error(problems.splice(before).join('\n'));
    }),
    { seed: SEED, numRuns: RUNS },
  );

  // Afterwards: the operator log and the history mirror still flow.
  const root = { authorization: `Bearer ${ROOT}` };
  const action = await api.http.post('/queues/after-barrage/pause').set(root);
  expect(action.status).toBe(200);
  const rid = action.headers['x-request-id'];
  await waitUntil(
    'the action after the barrage in GET /audit-log',
    async () => ((await api.http.get('/audit-log?limit=20').set(root)).body.items as { requestId: string }[]).some((e) => e.requestId === rid),
    15_000,
    100,
  );
  const job = await api.http.post('/jobs').set(root).send({ type: 'diag.echo', payload: { after: 'barrage' } });
  expect(job.status).toBe(201);
  const events = await waitUntil(
    'the events of the job enqueued after the barrage',
    async () => {
      const r = await api.http.get(`/jobs/${job.body.id}/events`).set(root);
      const names = r.status === 200 ? (r.body.items as { event: string }[]).map((e) => e.event) : [];
      return names.includes('enqueued') && names.includes('completed') ? names : undefined;
    },
    20_000,
    100,
  );
  expect(events[0]).toBe('enqueued');
  process.stdout.write(
    `hostile-routes: ${routes.length} routes, ${cases.length} sweep cases in ${swept} ms, ${RUNS} property runs, total ${Date.now() - started} ms; statuses ${JSON.stringify(Object.fromEntries(statuses))}\n`,
  );
}, 170_000);

/** One value of `arb`, reproducible from HOSTILE_SEED and the case's index. */
function sampleOf<T>(arb: fc.Arbitrary<T>, i: number): T {
  return fc.sample(arb, { seed: (SEED + i * 7919) | 0, numRuns: 1 })[0];
}
