/** One field problem of a 400 `validation_failed` response. */
export interface ErrorDetail {
  path: string;
  message: string;
}

/**
 * Error codes returned by the Lua scripts (negative integers) and the typed
 * errors they map to. The numbers are shared with `lua/includes/errors.lua`;
 * `errors.spec.ts` fails if the two files disagree.
 */
export enum ScriptErrorCode {
  /** The job key does not exist. */
  JobNotFound = -1,
  /** The job is in a state that does not allow the transition. */
  WrongState = -2,
  /** The lock token does not match the job's current lease (stale or wrong). */
  LeaseLost = -3,
  /** Idempotency key reused within its TTL with a different body. */
  IdempotencyConflict = -4,
  /** The job hash cannot be decoded (corrupted by hand, wrong key type). */
  DecodeError = -5,
  /** The queue awaits its check after a Redis restart (the restore fence, src/restore/loss-watch.ts). */
  Restoring = -6,
}

/** Base class: every engine error carries a stable machine-readable `code`. */
export class SluiceError extends Error {
  constructor(
    readonly code: string,
    message: string,
  ) {
    super(message);
    this.name = new.target.name;
  }
}

/** Unknown job id (maps to HTTP 404 `not_found`). */
export class JobNotFoundError extends SluiceError {
  constructor(readonly jobId: string) {
    super('not_found', `job ${jobId} not found`);
  }
}

/** Unknown flow id, or another project's flow (maps to HTTP 404 `not_found`). */
export class FlowNotFoundError extends SluiceError {
  constructor(readonly flowId: string) {
    super('not_found', `flow ${flowId} not found`);
  }
}

/** The job's state does not allow the action (HTTP 409 `conflict`). */
export class WrongStateError extends SluiceError {
  constructor(
    readonly jobId: string,
    readonly status: string,
    action: string,
  ) {
    super('conflict', `job ${jobId} is ${status}: cannot ${action}`);
  }
}

/** A stale or wrong lock token: the call changed nothing (HTTP 409 `lease_lost`). */
export class LeaseLostError extends SluiceError {
  constructor(readonly jobId: string) {
    super('lease_lost', `lease lost for job ${jobId}: lock token is stale or wrong`);
  }
}

/** Same idempotency key, different body, within the TTL (HTTP 409 `conflict`). */
export class IdempotencyConflictError extends SluiceError {
  constructor(readonly idempotencyKey: string) {
    super('conflict', `idempotency key "${idempotencyKey}" was used with a different body`);
  }
}

/** Invalid job options or configuration (HTTP 400 `validation_failed`). */
export class ValidationError extends SluiceError {
  constructor(
    message: string,
    readonly details: { path: string; message: string }[] = [],
  ) {
    super('validation_failed', message);
  }
}

/**
 * The engine refuses new work for now (HTTP 503 `unavailable`): load shedding,
 * e.g. while the audit backlog is over AUDIT_MAX_BACKLOG because PostgreSQL
 * is unreachable. Nothing was written; the same call can be retried later.
 */
export class UnavailableError extends SluiceError {
  constructor(message: string) {
    super('unavailable', message);
  }
}

/** No valid credentials (HTTP 401 `unauthorized`, with `WWW-Authenticate: Bearer`). */
export class UnauthorizedError extends SluiceError {
  readonly headers = { 'www-authenticate': 'Bearer realm="sluice"' };
  constructor(message = 'credentials required: send Authorization: Bearer <API key>') {
    super('unauthorized', message);
  }
}

/**
 * Too many requests for a limit (HTTP 429 `rate_limited` with `Retry-After`:
 * `retryAfterMs` rounded up to whole seconds): a key's rate limit, a
 * project's cap on waiting jobs. Nothing was done; the same call may succeed later.
 */
export class RateLimitedError extends SluiceError {
  constructor(
    message: string,
    readonly retryAfterMs: number,
  ) {
    super('rate_limited', message);
  }
}

/** Valid credentials whose role may not do this (HTTP 403 `forbidden`); also cross-site refusals. */
export class ForbiddenError extends SluiceError {
  constructor(message: string) {
    super('forbidden', message);
  }
}

/**
 * Maps a negative script return code to a typed error.
 * @throws never; returns the error for the caller to throw.
 */
export function errorFromCode(code: number, jobId: string, status = 'unknown', action = 'change it'): SluiceError {
  switch (code) {
    case ScriptErrorCode.JobNotFound:
      return new JobNotFoundError(jobId);
    case ScriptErrorCode.WrongState:
      return new WrongStateError(jobId, status, action);
    case ScriptErrorCode.LeaseLost:
      return new LeaseLostError(jobId);
    case ScriptErrorCode.IdempotencyConflict:
      return new IdempotencyConflictError(jobId);
    case ScriptErrorCode.DecodeError:
      return new SluiceError('decode_error', `job ${jobId} cannot be decoded`);
    case ScriptErrorCode.Restoring:
      return new UnavailableError('the queue is being checked against PostgreSQL after a Redis restart; retry shortly');
    default:
      return new SluiceError('internal', `unexpected script code ${code} for job ${jobId}`);
  }
}
