import Ajv, { type ValidateFunction } from 'ajv';
import addFormats from 'ajv-formats';
import type { OpenAPIObject } from '@nestjs/swagger';
import type request from 'supertest';

/** What the e2e response check needs of a supertest response. */
export interface CheckedResponse {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: unknown;
  text?: string;
}

/**
 * Paths the server answers outside the document (its info.description says so): Swagger UI
 * and the document itself, and the browser routes: `/` and `/dashboard` (302 to the
 * console) and the operator console's files under `/ui`. Their answers are checked only
 * for `X-Request-Id` (every answer carries it); test/e2e/dashboard.test.ts checks the rest.
 */
const UNDOCUMENTED = /^\/(docs(\/.*|-json)?|dashboard|ui(\/.*)?|)$/;

type Json = Record<string, unknown>;

/**
 * Validates responses against the served OpenAPI document: the e2e suite's
 * guard that the document and the code cannot drift (test/support/http.ts
 * runs every supertest response through {@link check}).
 *
 * A response fails when its (method, route) is not documented (an unknown
 * route must answer the error envelope with 404/405); when its status is not
 * documented for that operation; when a required header is missing; or when
 * its body does not match the documented schema. Validation is stricter than
 * the document on one point, deliberately: objects with listed properties are
 * closed (`additionalProperties: false`), so the server cannot send a field
 * the document does not name, while the published document stays open for
 * fields added later (API.md: add, never rename).
 * Schemas compile lazily, once per (operation, status), cached per document.
 */
export class OpenApiValidator {
  private readonly ajv: Ajv;
  private readonly compiled = new Map<string, ValidateFunction>();
  private readonly routes: { method: string; path: string; re: RegExp; params: number }[] = [];
  /** `operationId status` pairs seen (for a coverage line). */
  readonly exercised = new Set<string>();

  constructor(private readonly doc: OpenAPIObject) {
    this.ajv = new Ajv({ allErrors: true, strict: false });
    addFormats(this.ajv);
    for (const [name, schema] of Object.entries(doc.components?.schemas ?? {})) this.ajv.addSchema(closed(rewriteRefs(schema)) as Json, name);
    for (const [path, item] of Object.entries(doc.paths)) {
      const re = new RegExp('^' + path.replace(/[.*+?^$()|[\]\\]/g, '\\$&').replace(/\{[^}]+\}/g, '[^/]+') + '$');
      for (const method of Object.keys(item)) this.routes.push({ method, path, re, params: (path.match(/\{/g) ?? []).length });
    }
    // Fastify prefers a static segment to a parameter: so do we.
    this.routes.sort((a, b) => a.params - b.params);
  }

  /**
   * @returns null when `res` matches the document, else a message naming the
   *   request, the status and what is wrong (ajv's errors for a body).
   */
  check(method: string, url: string, res: CheckedResponse): string | null {
    // Segment by segment, as the router does: a segment that is not valid percent-encoding (the server's 400) stays as sent.
    const path = new URL(url, 'http://x').pathname.split('/').map(decodeSegment).join('/');
    const m = method.toLowerCase() === 'head' ? 'get' : method.toLowerCase();
    const where = `${method.toUpperCase()} ${url} → ${res.status}`;
    const route = this.routes.find((r) => r.method === m && r.re.test(path));
    if (!route) {
      if (m === 'options') return null;
      if (UNDOCUMENTED.test(path)) return res.headers['x-request-id'] === undefined ? `${where}: header X-Request-Id is missing` : null;
      if ((res.status === 404 || res.status === 405) && this.matches('Error', res.body)) return null;
      return `${where}: no documented operation for ${m.toUpperCase()} ${path}`;
    }
    const op = (this.doc.paths[route.path] as Json)[m] as { operationId: string; responses: Record<string, Json> };
    let answer = op.responses[String(res.status)];
    if (!answer) return `${where}: status ${res.status} is not documented for ${op.operationId} (documented: ${Object.keys(op.responses).join(', ')})`;
    if (typeof answer.$ref === 'string') answer = resolve(this.doc, answer.$ref) as Json;
    this.exercised.add(`${op.operationId} ${res.status}`);
    for (const [name, h] of Object.entries((answer.headers ?? {}) as Record<string, Json>)) {
      const header = (typeof h.$ref === 'string' ? resolve(this.doc, h.$ref) : h) as Json;
      if (header.required && res.headers[name.toLowerCase()] === undefined) return `${where}: header ${name} is missing`;
    }
    if (method.toLowerCase() === 'head') return null;
    const content = answer.content as Record<string, { schema?: Json }> | undefined;
    const type = String(res.headers['content-type'] ?? '').split(';')[0].trim();
    if (!content) return res.text ? `${where}: a body was sent, none is documented` : null;
    const media = content[type];
    if (!media) return `${where}: content type ${JSON.stringify(type)} is not documented (documented: ${Object.keys(content).join(', ')})`;
    if (!type.endsWith('json')) return typeof res.text === 'string' ? null : `${where}: expected a text body`;
    const key = `${m} ${route.path} ${res.status} ${type}`;
    let validate = this.compiled.get(key);
    if (!validate) {
      validate = this.ajv.compile(closed(rewriteRefs(media.schema ?? {})) as Json);
      this.compiled.set(key, validate);
    }
    if (validate(res.body)) return null;
    const errors = (validate.errors ?? []).slice(0, 10).map((e) => `  ${e.instancePath || '(body)'} ${e.message}${e.params && Object.keys(e.params).length ? ' ' + JSON.stringify(e.params) : ''}`);
    return `${where}: the body does not match the documented schema of ${op.operationId}:\n${errors.join('\n')}\nbody: ${JSON.stringify(res.body).slice(0, 500)}`;
  }

  /** One line: how many documented (operation, status) pairs the responses seen so far exercised. */
  coverageLine(): string {
    let documented = 0;
    for (const item of Object.values(this.doc.paths)) for (const op of Object.values(item as Record<string, { responses?: object }>)) documented += Object.keys(op.responses ?? {}).length;
    return `OpenAPI: ${this.exercised.size} of ${documented} documented (operation, status) answers exercised`;
  }

  private matches(schema: string, body: unknown): boolean {
    const v = this.ajv.getSchema(schema);
    return !!v && v(body) === true;
  }
}

/** A path segment percent-decoded; as sent when it is not valid percent-encoded UTF-8. A decoded `/` cannot split it: the route patterns match `[^/]+` per parameter. */
function decodeSegment(segment: string): string {
  try {
    return decodeURIComponent(segment).replace(/\//g, '%2F');
  } catch {
    return segment;
  }
}

/** `#/components/schemas/X` → `X` (the name each component schema is added under). */
function rewriteRefs(s: unknown): unknown {
  if (Array.isArray(s)) return s.map(rewriteRefs);
  if (!s || typeof s !== 'object') return s;
  const out: Json = {};
  for (const [k, v] of Object.entries(s)) out[k] = k === '$ref' && typeof v === 'string' ? v.replace('#/components/schemas/', '') : rewriteRefs(v);
  return out;
}

/** Objects with `properties` and no `additionalProperties` become closed (see the class comment). */
function closed(s: unknown): unknown {
  if (Array.isArray(s)) return s.map(closed);
  if (!s || typeof s !== 'object') return s;
  const out: Json = {};
  for (const [k, v] of Object.entries(s)) {
    if (k === 'example') out[k] = v;
    else out[k] = k === 'properties' ? Object.fromEntries(Object.entries(v as Json).map(([p, ps]) => [p, closed(ps)])) : closed(v);
  }
  if (out.properties && out.additionalProperties === undefined && !out.allOf && !out.oneOf && !out.anyOf) out.additionalProperties = false;
  return out;
}

function resolve(doc: OpenAPIObject, ref: string): unknown {
  return ref
    .replace(/^#\//, '')
    .split('/')
    .reduce<unknown>((node, part) => (node as Json)?.[part.replace(/~1/g, '/').replace(/~0/g, '~')], doc);
}

type Agent = ReturnType<typeof request>;
const METHODS = ['get', 'post', 'put', 'patch', 'delete', 'del', 'head', 'options'] as const;

/**
 * Wraps a supertest agent so every response it receives is checked by
 * `validator` (as a last assertion: the test's own `.expect()`s report
 * first). A mismatch fails the request with the validator's message.
 */
export function validatingAgent(agent: Agent, validator: () => OpenApiValidator | null): Agent {
  return new Proxy(agent, {
    get(target, prop, receiver) {
      const value = Reflect.get(target, prop, receiver) as unknown;
      if (typeof prop !== 'string' || !(METHODS as readonly string[]).includes(prop) || typeof value !== 'function') return value;
      return (url: string, ...rest: unknown[]) => {
        const test = (value as (...a: unknown[]) => request.Test).call(target, url, ...rest);
        const end = test.end.bind(test);
        const method = prop === 'del' ? 'delete' : prop;
        test.end = (fn?: request.CallbackHandler) => {
          test.expect((res: request.Response) => {
            const v = validator();
            const problem = v?.check(method, url, res) ?? null;
            if (problem) throw new Error(`OpenAPI document mismatch: ${problem}`);
          });
          return end(fn);
        };
        return test;
      };
    },
  });
}
