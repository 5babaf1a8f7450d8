import { findBadJsonString } from './json-guard';
import { ValidationError } from './errors';
import type { Json } from './job';

/** Largest `payload` filter accepted, bytes of its JSON text. */
export const PAYLOAD_FILTER_MAX_BYTES = 4096;
/** Deepest nesting of a `payload` filter (objects and arrays). */
export const PAYLOAD_FILTER_MAX_DEPTH = 8;

const bad = (message: string): never => {
  throw new ValidationError(`invalid payload filter: ${message}`, [{ path: 'payload', message }]);
};

/** Levels of objects/arrays in `v` (a scalar is 0), counted no further than max + 1. */
function depthOf(v: Json, max: number, d = 1): number {
  if (v === null || typeof v !== 'object') return d - 1;
  if (d > max) return d;
  let deepest = d;
  for (const c of Array.isArray(v) ? v : Object.values(v)) deepest = Math.max(deepest, depthOf(c, max, d + 1));
  return deepest;
}

/**
 * The `payload` filter of `GET /jobs` (JSON containment, PostgreSQL's `@>`):
 * a JSON object of at most {@link PAYLOAD_FILTER_MAX_BYTES} bytes and
 * {@link PAYLOAD_FILTER_MAX_DEPTH} levels, e.g. `{"orderId":42}`.
 * @returns the object, re-serialized (what is sent to PostgreSQL).
 * @throws ValidationError naming `payload` otherwise.
 */
export function parsePayloadFilter(text: string): string {
  if (Buffer.byteLength(text, 'utf8') > PAYLOAD_FILTER_MAX_BYTES) bad(`must be at most ${PAYLOAD_FILTER_MAX_BYTES} bytes`);
  let v: Json;
  try {
    v = JSON.parse(text) as Json;
  } catch {
    return bad('must be JSON, e.g. {"orderId":42}');
  }
  if (v === null || typeof v !== 'object' || Array.isArray(v)) bad('must be a JSON object');
  // As in bodies (src/server/http-app.ts): no NUL or lone surrogate (PostgreSQL jsonb holds neither), no prototype keys.
  const badString = findBadJsonString(v);
  if (badString) bad(`${badString.path ? `${badString.path}: ` : ''}${badString.message}`);
  const proto = prototypeKey(v);
  if (proto) bad(`must not hold the key ${proto}`);
  if (depthOf(v, PAYLOAD_FILTER_MAX_DEPTH) > PAYLOAD_FILTER_MAX_DEPTH) bad(`must be nested at most ${PAYLOAD_FILTER_MAX_DEPTH} levels deep`);
  return JSON.stringify(v);
}

/**
 * The first prototype-poisoning key of `v`, refused as Fastify's body parser
 * refuses them (`protoAction`/`constructorAction: 'error'`): `__proto__`
 * anywhere, `constructor` holding a `prototype`. Iterative (no recursion).
 */
function prototypeKey(v: Json): string | null {
  const stack: Json[] = [v];
  while (stack.length) {
    const x = stack.pop();
    if (x === null || typeof x !== 'object') continue;
    if (Array.isArray(x)) {
      stack.push(...x);
      continue;
    }
    if (Object.prototype.hasOwnProperty.call(x, '__proto__')) return '__proto__';
    const c = Object.prototype.hasOwnProperty.call(x, 'constructor') ? (x as Record<string, Json>).constructor : undefined;
    if (c && typeof c === 'object' && Object.prototype.hasOwnProperty.call(c, 'prototype')) return 'constructor.prototype';
    stack.push(...Object.values(x));
  }
  return null;
}
