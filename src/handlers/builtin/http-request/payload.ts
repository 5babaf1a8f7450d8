import { UnrecoverableError } from '../../../core/handler';
import type { Json } from '../../../core/job';

/** Methods an `http.request` job may use (no CONNECT, TRACE). */
export const HTTP_METHODS = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'] as const;
export type HttpMethod = (typeof HTTP_METHODS)[number];

/** Whole-request time limit when the payload names none, ms. */
export const DEFAULT_TIMEOUT_MS = 10_000;
/** Largest `timeoutMs` a payload may ask for, ms (the job's own timeoutMs aborts earlier if shorter). */
export const MAX_TIMEOUT_MS = 60_000;
export const MAX_URL_CHARS = 8192;
export const MAX_HEADERS = 64;
export const MAX_HEADER_VALUE_CHARS = 8192;
export const MAX_HEADERS_BYTES = 32 * 1024;
/** Largest request body, bytes (UTF-8). */
export const MAX_BODY_BYTES = 1024 * 1024;

/**
 * Headers the handler owns: framing and connection management (a job setting
 * them could smuggle a second request or break the body length), and `Host`
 * (the host is the URL's).
 */
const FORBIDDEN_HEADERS = new Set(['host', 'content-length', 'transfer-encoding', 'connection', 'keep-alive', 'upgrade', 'te', 'trailer', 'proxy-connection', 'expect', 'http2-settings']);
const TOKEN = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]{1,256}$/;
/** Field value: visible ASCII, obs-text (latin-1 bytes, which is all Node sends), spaces and tabs; no CR, LF, NUL. */
const FIELD_VALUE = /^[\t\x20-\x7e\x80-\xff]*$/;
const KEYS = new Set(['method', 'url', 'headers', 'body', 'timeoutMs']);

/** A validated `http.request` payload. Header names are lower case. */
export interface HttpRequestSpec {
  method: HttpMethod;
  url: URL;
  headers: Record<string, string>;
  body: Buffer | null;
  timeoutMs: number;
}

const bad = (msg: string) => new UnrecoverableError(`http.request: ${msg}`);

/**
 * Validates an `http.request` payload `{ method, url, headers?, body?, timeoutMs? }`.
 * `body` is a string (sent as is, default `Content-Type: text/plain;
 * charset=utf-8`) or any other JSON value (sent as JSON, default
 * `Content-Type: application/json`); GET and HEAD take none.
 * @throws UnrecoverableError naming the field on any bad input (messages
 *   never echo header values or the body).
 */
export function parseHttpRequestPayload(p: Record<string, Json>): HttpRequestSpec {
  for (const k of Object.keys(p)) if (!KEYS.has(k)) throw bad(`unknown payload field ${JSON.stringify(k.slice(0, 64))} (expected method, url, headers, body, timeoutMs)`);

  if (typeof p.method !== 'string') throw bad(`payload.method must be one of ${HTTP_METHODS.join(', ')}`);
  const method = p.method.toUpperCase() as HttpMethod;
  if (!HTTP_METHODS.includes(method)) throw bad(`payload.method must be one of ${HTTP_METHODS.join(', ')}`);

  if (typeof p.url !== 'string' || !p.url || p.url.length > MAX_URL_CHARS) throw bad(`payload.url must be a string of 1..${MAX_URL_CHARS} characters`);
  let url: URL;
  try {
    url = new URL(p.url);
  } catch {
    throw bad('payload.url is not a valid absolute URL');
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw bad('payload.url must use http or https');
  if (url.username || url.password) throw bad('payload.url must not carry credentials (send them in payload.headers)');
  url.hash = '';

  const headers: Record<string, string> = {};
  if (p.headers !== undefined && p.headers !== null) {
    if (typeof p.headers !== 'object' || Array.isArray(p.headers)) throw bad('payload.headers must be an object of header name to string value');
    const entries = Object.entries(p.headers);
    if (entries.length > MAX_HEADERS) throw bad(`payload.headers has more than ${MAX_HEADERS} headers`);
    let bytes = 0;
    for (const [name, value] of entries) {
      if (!TOKEN.test(name)) throw bad(`payload.headers: ${JSON.stringify(name.slice(0, 64))} is not a valid header name`);
      const lower = name.toLowerCase();
      if (FORBIDDEN_HEADERS.has(lower)) throw bad(`payload.headers: ${lower} is set by the handler and may not be given`);
      if (lower in headers) throw bad(`payload.headers: ${lower} given twice`);
      if (typeof value !== 'string') throw bad(`payload.headers.${lower} must be a string`);
      if (value.length > MAX_HEADER_VALUE_CHARS || !FIELD_VALUE.test(value)) {
        throw bad(`payload.headers.${lower} must be at most ${MAX_HEADER_VALUE_CHARS} characters without control characters or characters beyond U+00FF`);
      }
      bytes += lower.length + value.length + 4;
      headers[lower] = value;
    }
    if (bytes > MAX_HEADERS_BYTES) throw bad(`payload.headers exceed ${MAX_HEADERS_BYTES} bytes in all`);
  }

  let body: Buffer | null = null;
  if (p.body !== undefined && p.body !== null) {
    if (method === 'GET' || method === 'HEAD') throw bad(`payload.body is not allowed with ${method}`);
    const text = typeof p.body === 'string' ? p.body : JSON.stringify(p.body);
    body = Buffer.from(text, 'utf8');
    if (body.length > MAX_BODY_BYTES) throw bad(`payload.body exceeds ${MAX_BODY_BYTES} bytes`);
    headers['content-type'] ??= typeof p.body === 'string' ? 'text/plain; charset=utf-8' : 'application/json';
  }

  let timeoutMs = DEFAULT_TIMEOUT_MS;
  if (p.timeoutMs !== undefined && p.timeoutMs !== null) {
    if (typeof p.timeoutMs !== 'number' || !Number.isInteger(p.timeoutMs) || p.timeoutMs < 1 || p.timeoutMs > MAX_TIMEOUT_MS) {
      throw bad(`payload.timeoutMs must be an integer 1..${MAX_TIMEOUT_MS}`);
    }
    timeoutMs = p.timeoutMs;
  }
  return { method, url, headers, body, timeoutMs };
}
