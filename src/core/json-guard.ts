import type { ErrorDetail } from './errors';

/**
 * Checks on JSON request bodies and query strings that protect every route
 * at once (src/server/http-app.ts runs them; nothing here recurses):
 * - nesting depth: a body may nest at most {@link MAX_JSON_DEPTH} levels of
 *   objects and arrays (the body itself is level 1), checked on the text
 *   before JSON.parse, so no later recursive walk (prototype-poisoning scan,
 *   validation, JSON.stringify) can overflow the stack;
 * - strings: no string of a body (object keys and values) and no query or
 *   path parameter may hold a NUL character (U+0000) or a lone UTF-16
 *   surrogate. PostgreSQL `text` cannot hold NUL, `jsonb` holds neither, and
 *   UTF-8 (Redis keys, PostgreSQL text) cannot encode a lone surrogate, so
 *   such a string could not read back the same from Redis and PostgreSQL.
 */

/** Largest nesting of objects/arrays in a JSON body; the body itself is level 1. */
export const MAX_JSON_DEPTH = 64;

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const OPEN_BRACE = 0x7b;
const OPEN_BRACKET = 0x5b;
const CLOSE_BRACE = 0x7d;
const CLOSE_BRACKET = 0x5d;

/**
 * True when the JSON text nests objects/arrays deeper than `max` levels.
 * One pass over the text, no recursion; brackets inside strings are skipped.
 * Works on any text (malformed JSON is left to JSON.parse).
 */
export function jsonDepthExceeds(text: string, max = MAX_JSON_DEPTH): boolean {
  // Fast path: fewer opening brackets in all than the limit (indexOf is a vectorized search).
  let opens = 0;
  for (let i = text.indexOf('{'); i !== -1 && opens <= max; i = text.indexOf('{', i + 1)) opens++;
  for (let i = text.indexOf('['); i !== -1 && opens <= max; i = text.indexOf('[', i + 1)) opens++;
  if (opens <= max) return false;
  let depth = 0;
  const n = text.length;
  for (let i = 0; i < n; i++) {
    const c = text.charCodeAt(i);
    if (c === QUOTE) {
      // Skip the string: to the next quote that is not escaped.
      for (i++; i < n; i++) {
        const d = text.charCodeAt(i);
        if (d === BACKSLASH) i++;
        else if (d === QUOTE) break;
      }
    } else if (c === OPEN_BRACE || c === OPEN_BRACKET) {
      if (++depth > max) return true;
    } else if (c === CLOSE_BRACE || c === CLOSE_BRACKET) {
      depth--;
    }
  }
  return false;
}

/**
 * A JSON text can only hold a NUL or a lone surrogate as a `\u0000` or
 * `\uD800`..`\uDFFF` escape (raw control characters are not JSON, and bytes
 * that are not UTF-8 decode to U+FFFD). Text without such an escape needs no
 * walk of its strings: the common case costs one regex scan.
 */
const SUSPECT_ESCAPE = /\\u(?:0000|[dD][89a-fA-F])/;

/** ES2024 string methods (Node ≥ 20), not in this project's ES2022 typings. */
type Es2024String = string & { isWellFormed(): boolean; toWellFormed(): string };

/** Why a string may not be stored, or null when it may. */
export function badStringReason(s: string): string | null {
  if (s.includes('\u0000')) return 'must not contain NUL characters (U+0000)';
  if (!(s as Es2024String).isWellFormed()) return 'must not contain lone UTF-16 surrogates';
  return null;
}

/** A key as it may be shown in a path: the offending characters replaced by U+FFFD. */
function printable(key: string): string {
  return (key.replaceAll('\u0000', '\uFFFD') as Es2024String).toWellFormed();
}

/**
 * Finds the first string (object key or value) of a parsed JSON body that
 * {@link badStringReason} refuses.
 * @param text the body's JSON text: when it holds no suspect escape, the walk is skipped.
 * @returns `{path, message}` with a dotted path (`jobs.0.payload.name`; a bad
 *   key is named by its own path), or null when every string may be stored.
 */
export function findBadJsonString(value: unknown, text?: string): ErrorDetail | null {
  if (text !== undefined && !SUSPECT_ESCAPE.test(text)) return null;
  return hasBadString(value) ? locateBadString(value) : null;
}

/** Whether any string of the value is refused: the walk without building paths (the common answer is no). */
function hasBadString(value: unknown): boolean {
  const stack: unknown[] = [value];
  while (stack.length) {
    const v = stack.pop();
    if (typeof v === 'string') {
      if (badStringReason(v)) return true;
    } else if (Array.isArray(v)) {
      for (let i = 0; i < v.length; i++) stack.push(v[i]);
    } else if (v !== null && typeof v === 'object') {
      for (const k in v) {
        if (badStringReason(k)) return true;
        stack.push((v as Record<string, unknown>)[k]);
      }
    }
  }
  return false;
}

/** The first refused string, with its path (a second walk, only once one is known to exist). */
function locateBadString(value: unknown): ErrorDetail | null {
  const stack: { v: unknown; path: string }[] = [{ v: value, path: '' }];
  while (stack.length) {
    const { v, path } = stack.pop()!;
    if (typeof v === 'string') {
      const reason = badStringReason(v);
      if (reason) return { path, message: reason };
    } else if (Array.isArray(v)) {
      for (let i = v.length - 1; i >= 0; i--) stack.push({ v: v[i], path: path ? `${path}.${i}` : String(i) });
    } else if (v !== null && typeof v === 'object') {
      const keys = Object.keys(v);
      for (const k of keys) {
        const reason = badStringReason(k);
        if (reason) return { path: path ? `${path}.${printable(k)}` : printable(k), message: `key ${reason}` };
      }
      for (let i = keys.length - 1; i >= 0; i--) {
        const k = keys[i];
        stack.push({ v: (v as Record<string, unknown>)[k], path: path ? `${path}.${k}` : k });
      }
    }
  }
  return null;
}

/**
 * Checks the values of a parsed query string or of path parameters.
 * @returns the first refused value as `{path: name, message}`, or null.
 */
export function findBadParam(params: unknown): ErrorDetail | null {
  if (params === null || typeof params !== 'object') return null;
  for (const [k, v] of Object.entries(params)) {
    for (const s of Array.isArray(v) ? v : [v]) {
      const reason = typeof s === 'string' ? badStringReason(s) : null;
      if (reason) return { path: printable(k), message: reason };
    }
    const kr = badStringReason(k);
    if (kr) return { path: printable(k), message: `name ${kr}` };
  }
  return null;
}
