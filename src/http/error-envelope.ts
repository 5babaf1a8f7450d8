import { HttpException } from '@nestjs/common';
import { SluiceError, type ErrorDetail } from '../core/errors';

export type { ErrorDetail };

/** The API.md error envelope: every non-2xx body has exactly this shape. */
export interface ErrorBody {
  error: { code: string; message: string; details: ErrorDetail[]; requestId: string };
}

/** An error mapped to its HTTP form. `headers` e.g. Retry-After for 429. */
export interface MappedError {
  status: number;
  code: string;
  message: string;
  details: ErrorDetail[];
  headers: Record<string, string>;
  /** True for errors we did not expect (500): logged with their stack, never sent. */
  unexpected: boolean;
}

/** Engine error codes (src/core/errors.ts) → HTTP status. */
const STATUS_BY_CODE: Record<string, number> = {
  validation_failed: 400,
  unauthorized: 401,
  forbidden: 403,
  not_found: 404,
  conflict: 409,
  lease_lost: 409,
  payload_too_large: 413,
  unsupported_media_type: 415,
  rate_limited: 429,
  unavailable: 503,
};

/**
 * HTTP status → envelope code, for errors that only carry a status (Nest,
 * Fastify, Node's HTTP parser: src/server/client-error.ts). The OpenAPI
 * document's common answers take their codes from here too.
 */
export const CODE_BY_STATUS: Readonly<Record<number, string>> = {
  400: 'validation_failed',
  401: 'unauthorized',
  403: 'forbidden',
  404: 'not_found',
  405: 'not_found',
  408: 'request_timeout',
  409: 'conflict',
  413: 'payload_too_large',
  414: 'uri_too_long',
  415: 'unsupported_media_type',
  429: 'rate_limited',
  431: 'headers_too_large',
  503: 'unavailable',
};

/** Messages for the errors of the HTTP layer, by status or Fastify error code; undefined keeps the error's own. */
function httpLayerMessage(status: number, code: unknown, message: string): string {
  if (status === 413) return 'request body too large';
  if (status === 415) return 'Content-Type must be application/json for a request with a body';
  if (code === 'FST_ERR_BAD_URL') return 'malformed URL: a path segment is not valid percent-encoded UTF-8';
  if (code === 'FST_ERR_MAX_PARAM_LENGTH') return 'a path segment (an id, a name or a key) is longer than 256 characters';
  return message;
}

/** Node/pg/ioredis error codes that mean "a backing service is unreachable". */
const NETWORK_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'ENOTFOUND', 'EHOSTUNREACH', 'ECONNABORTED']);

/** Error replies of Redis that mean "not now", not "bad command" (the first word of the reply). */
const REDIS_TRANSIENT = /^(NOREPLICAS|READONLY|LOADING|MASTERDOWN|CLUSTERDOWN|TRYAGAIN|MISCONF|BUSY|OOM|UNBLOCKED)\b/;

/**
 * Redis Cluster replies and ioredis Cluster errors of a failover or a slot
 * migration: the slot has no master yet (CLUSTERDOWN), is moving (TRYAGAIN,
 * ASK), moved and the reply reached the caller (MOVED, see
 * src/redis/scripts.ts), or ioredis ran out of redirections or nodes. A
 * retry a little later succeeds: 503, not 500.
 */
const CLUSTER_UNAVAILABLE = /^(CLUSTERDOWN|TRYAGAIN|MOVED|ASK)\b|Too many Cluster redirections|Failed to refresh slots cache|Cluster is (ended|disconnected|disconnecting)/;

/**
 * True when `e` says Redis or PostgreSQL cannot be reached (→ 503, not 500):
 * socket errors, ioredis' closed-connection and retries-exhausted errors, a
 * Redis Cluster failing over ({@link CLUSTER_UNAVAILABLE}), pg's connection
 * and admin-shutdown classes (SQLSTATE 08xxx, 57Pxx), and a pg pool that
 * cannot get a connection in time.
 */
export function isUnavailable(e: unknown): boolean {
  if (!e || typeof e !== 'object') return false;
  const err = e as { code?: unknown; name?: unknown; message?: unknown };
  const code = typeof err.code === 'string' ? err.code : '';
  if (NETWORK_CODES.has(code) || /^08|^57P/.test(code)) return true;
  if (err.name === 'MaxRetriesPerRequestError') return true;
  const msg = typeof err.message === 'string' ? err.message : '';
  // Redis refusing writes for now: no replica in reach (min-replicas-to-write),
  // a demoted master, loading its dataset, a failed persistence, a cluster
  // slot failing over, a script busy (the soak saw NOREPLICAS answered as 500).
  if (err.name === 'ReplyError' && REDIS_TRANSIENT.test(msg)) return true;
  return /Connection is closed|Stream isn't writeable|connect ECONNREFUSED|Connection terminated|timeout exceeded when trying to connect|Cluster is not ready|None of startup nodes is available/i.test(msg) || CLUSTER_UNAVAILABLE.test(msg);
}

/**
 * Maps any thrown value to its HTTP status, envelope code and message.
 * Sources, in order: the engine's SluiceError codes; Nest HttpExceptions;
 * Fastify's and Node's own errors (body too large 413, bad JSON 400, bad
 * content type 415, bad URL 400, over-long path segment 414, client timeout
 * 408, headers too large 431: they carry `statusCode`); unreachable
 * Redis/Postgres (503); anything else 500
 * with a generic message (no stack trace leaves the process).
 */
export function mapError(e: unknown): MappedError {
  const base = { details: [] as ErrorDetail[], headers: {} as Record<string, string>, unexpected: false };
  if (e instanceof SluiceError) {
    const status = STATUS_BY_CODE[e.code];
    if (status) {
      const details = (e as { details?: ErrorDetail[] }).details ?? [];
      const headers: Record<string, string> = { ...((e as { headers?: Record<string, string> }).headers ?? {}) };
      const retryAfterMs = (e as { retryAfterMs?: number }).retryAfterMs;
      if (status === 429 || retryAfterMs !== undefined) headers['retry-after'] = String(Math.max(1, Math.ceil((retryAfterMs ?? 1000) / 1000)));
      return { ...base, status, code: e.code, message: e.message, details, headers };
    }
    if (e.code === 'decode_error') return { ...base, status: 409, code: 'conflict', message: e.message };
  }
  if (e instanceof HttpException) {
    const status = e.getStatus();
    const code = CODE_BY_STATUS[status] ?? (status >= 500 ? 'internal' : 'validation_failed');
    const resp = e.getResponse();
    let message = e.message;
    if (typeof resp === 'object' && resp && 'message' in resp) {
      const m = (resp as { message: unknown }).message;
      message = Array.isArray(m) ? m.join('; ') : String(m);
    }
    if (status === 404 && /^Cannot (GET|POST|PUT|PATCH|DELETE|HEAD|OPTIONS)/.test(message)) message = `no route ${message.slice(7)}`;
    if (status === 400 && /JSON/.test(message)) message = `malformed JSON body: ${message}`;
    message = httpLayerMessage(status, undefined, message);
    const details = status === 400 ? [{ path: '', message }] : [];
    return { ...base, status, code, message, details, unexpected: status >= 500 };
  }
  const fst = e as { statusCode?: unknown; code?: unknown; message?: unknown };
  if (typeof fst?.statusCode === 'number' && fst.statusCode >= 400 && fst.statusCode < 500) {
    const status = fst.statusCode;
    const code = CODE_BY_STATUS[status] ?? 'validation_failed';
    let message = typeof fst.message === 'string' ? fst.message : 'bad request';
    if (e instanceof SyntaxError || fst.code === 'FST_ERR_CTP_INVALID_JSON_BODY' || /JSON/.test(message)) message = `malformed JSON body: ${message}`;
    message = httpLayerMessage(status, fst.code, message);
    const details = status === 400 ? [{ path: '', message }] : [];
    const retryAfterMs = (e as { retryAfterMs?: unknown }).retryAfterMs;
    const headers: Record<string, string> = status === 429 && typeof retryAfterMs === 'number' ? { 'retry-after': String(Math.max(1, Math.ceil(retryAfterMs / 1000))) } : {};
    return { ...base, status, code, message, details, headers };
  }
  if (isUnavailable(e)) {
    return { ...base, status: 503, code: 'unavailable', message: 'a backing service (Redis or PostgreSQL) is unreachable; retry later' };
  }
  return { ...base, status: 500, code: 'internal', message: 'internal error', unexpected: true };
}

/** Builds the envelope body for a mapped error. */
export function errorBody(m: MappedError, requestId: string): ErrorBody {
  return { error: { code: m.code, message: m.message, details: m.details, requestId } };
}
