import type { components } from './schema';

/** One field's problem in a `validation_failed` answer: `path` is dotted (`jobs.3.type`), empty for the whole body. */
export type ErrorDetail = components['schemas']['ErrorDetail'];

/** The envelope's `code`, plus the client's own `timeout` and `connection_failed` (no answer at all). */
export type ErrorCode = components['schemas']['Error']['error']['code'] | 'timeout' | 'connection_failed' | (string & {});

/**
 * Every error the client throws. `status` is the HTTP status (0 when no
 * answer came: timeout, connection refused), `code`/`message`/`details`/`requestId`
 * come from the server's envelope `{error: {code, message, details, requestId}}`.
 */
export class SluiceError extends Error {
  override name = 'SluiceError';
  constructor(
    message: string,
    readonly status: number,
    readonly code: ErrorCode,
    readonly details: ErrorDetail[] = [],
    readonly requestId: string | null = null,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}

/** 400 `validation_failed`: `details` lists `{path, message}` per field. */
export class ValidationFailedError extends SluiceError {
  override name = 'ValidationFailedError';
}
/** 401 `unauthorized`: AUTH is on and the key is missing, unknown, revoked or expired. */
export class UnauthorizedError extends SluiceError {
  override name = 'UnauthorizedError';
}
/** 403 `forbidden`: the key's role may not do this. */
export class ForbiddenError extends SluiceError {
  override name = 'ForbiddenError';
}
/** 404 `not_found`: unknown id or queue (another project's too). */
export class NotFoundError extends SluiceError {
  override name = 'NotFoundError';
}
/** 409 `conflict`: the job's state does not allow it, or an idempotency key reused with another body. */
export class ConflictError extends SluiceError {
  override name = 'ConflictError';
}
/** 409 `lease_lost`: the lease expired or the lock token is stale; nothing changed, the job is someone else's. */
export class LeaseLostError extends ConflictError {
  override name = 'LeaseLostError';
}
/** 413 `payload_too_large`. */
export class PayloadTooLargeError extends SluiceError {
  override name = 'PayloadTooLargeError';
}
/** 429 `rate_limited` (after the client's retries): `retryAfterMs` from `Retry-After`. */
export class RateLimitedError extends SluiceError {
  override name = 'RateLimitedError';
  constructor(
    message: string,
    status: number,
    code: ErrorCode,
    details: ErrorDetail[],
    requestId: string | null,
    readonly retryAfterMs: number | null,
  ) {
    super(message, status, code, details, requestId);
  }
}
/** 503 `unavailable` (after the client's retries): Redis/PostgreSQL down or load shedding. */
export class UnavailableError extends SluiceError {
  override name = 'UnavailableError';
  constructor(
    message: string,
    status: number,
    code: ErrorCode,
    details: ErrorDetail[],
    requestId: string | null,
    readonly retryAfterMs: number | null,
  ) {
    super(message, status, code, details, requestId);
  }
}
/** No answer within the client's `timeoutMs` (status 0, code `timeout`). */
export class TimeoutError extends SluiceError {
  override name = 'TimeoutError';
}
/** The server could not be reached (refused, reset, DNS; status 0, code `connection_failed`); `cause` is fetch's error. */
export class ConnectionError extends SluiceError {
  override name = 'ConnectionError';
}

/**
 * `Retry-After` (delta seconds or an HTTP date) in ms; null when absent or unreadable.
 * `now` in epoch ms, for the date form.
 */
export function parseRetryAfter(value: string | null, now = Date.now()): number | null {
  if (!value) return null;
  const v = value.trim();
  if (/^\d+$/.test(v)) return Number(v) * 1000;
  const at = Date.parse(v);
  return Number.isNaN(at) ? null : Math.max(0, at - now);
}

/**
 * The typed error for a non-2xx answer. `body` is the parsed body (the
 * envelope, or anything else a proxy may have sent); `headers` give
 * `Retry-After` and `X-Request-Id` when the envelope lacks a request id.
 */
export function errorFromResponse(status: number, body: unknown, headers: Headers): SluiceError {
  const env = (body as { error?: Partial<components['schemas']['Error']['error']> } | null)?.error;
  const code: ErrorCode = typeof env?.code === 'string' ? env.code : codeOfStatus(status);
  const message = typeof env?.message === 'string' ? env.message : `HTTP ${status}`;
  const details = Array.isArray(env?.details) ? env.details : [];
  const requestId = (typeof env?.requestId === 'string' ? env.requestId : null) ?? headers.get('x-request-id');
  const args = [message, status, code, details, requestId] as const;
  if (code === 'lease_lost') return new LeaseLostError(...args);
  switch (status) {
    case 400:
      return new ValidationFailedError(...args);
    case 401:
      return new UnauthorizedError(...args);
    case 403:
      return new ForbiddenError(...args);
    case 404:
      return new NotFoundError(...args);
    case 409:
      return new ConflictError(...args);
    case 413:
      return new PayloadTooLargeError(...args);
    case 429:
      return new RateLimitedError(...args, parseRetryAfter(headers.get('retry-after')));
    case 503:
      return new UnavailableError(...args, parseRetryAfter(headers.get('retry-after')));
    default:
      return new SluiceError(...args);
  }
}

function codeOfStatus(status: number): ErrorCode {
  const byStatus: Record<number, ErrorCode> = { 400: 'validation_failed', 401: 'unauthorized', 403: 'forbidden', 404: 'not_found', 409: 'conflict', 413: 'payload_too_large', 415: 'unsupported_media_type', 429: 'rate_limited', 503: 'unavailable' };
  return byStatus[status] ?? (status >= 500 ? 'internal' : 'validation_failed');
}
