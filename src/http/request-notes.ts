import type { FastifyRequest } from 'fastify';
import type { ErrorDetail } from './error-envelope';

/**
 * What the layers of one request tell each other beyond its body: kept on
 * the Fastify request (symbols, so no route or client can set them).
 */

/** Where a request's body time went, ms since the epoch (0: not yet); written by src/server/json-body.ts. */
export interface BodyTiming {
  /** Bytes read. */
  bytes: number;
  /** When its reading started, when its last byte came, when its parse started and ended. */
  readFrom: number;
  readTo: number;
  parseFrom: number;
  parseTo: number;
  /** When the parsed body was handed to the route (from then on the route may write). */
  handedAt: number;
  /**
   * Drops the body while it is not yet handed to the route: stops reading,
   * skips its parse, gives its bytes back, and the route never runs.
   * @returns true when dropped (nothing of the request was or will be written),
   *   false when the route has it already.
   */
  abandon(): boolean;
}

/**
 * What a client should do after a 503 whose outcome is unknown (the answer
 * deadline's, src/server/answer-deadline.ts), once the route knows more than
 * "retry with the same idempotency key": e.g. `POST /flows` names its flow
 * id and whether the flow may exist.
 */
export interface RetryAdvice {
  /** Replaces the generic advice at the end of the 503's message. */
  message: string;
  /** Put in the 503's `details` (e.g. `{path: 'flowId', message: <id>}`). */
  details: ErrorDetail[];
}

const TIMING = Symbol('sluice.bodyTiming');
const ADVICE = Symbol('sluice.retryAdvice');
type Noted = FastifyRequest & { [TIMING]?: BodyTiming; [ADVICE]?: RetryAdvice };

/** The body timing of a request whose JSON body was read (undefined: no body). */
export function bodyTimingOf(req: FastifyRequest): BodyTiming | undefined {
  return (req as Noted)[TIMING];
}

export function setBodyTiming(req: FastifyRequest, t: BodyTiming): void {
  (req as Noted)[TIMING] = t;
}

/** Bytes of the request's body (0 without one). */
export function bodyBytesOf(req: FastifyRequest): number {
  return (req as Noted)[TIMING]?.bytes ?? 0;
}

/** When the request's body began to arrive (ms since the epoch; now without a body): the age heavy turns are ordered by. */
export function bodySinceOf(req: FastifyRequest): number {
  return (req as Noted)[TIMING]?.readFrom ?? Date.now();
}

/** Sets (or replaces) what a 503 of this request should advise. */
export function adviseRetry(req: FastifyRequest, advice: RetryAdvice): void {
  (req as Noted)[ADVICE] = advice;
}

export function retryAdviceOf(req: FastifyRequest): RetryAdvice | undefined {
  return (req as Noted)[ADVICE];
}

const HIDE = Symbol('sluice.hidePayloads');

/** Marks a request whose answer must have its payloads hidden (src/auth/hide-payloads.interceptor.ts sets it). */
export function markPayloadsHidden(req: FastifyRequest): void {
  (req as unknown as Record<symbol, boolean>)[HIDE] = true;
}

/** Whether the answer of this request hides payloads, results and log messages (API.md v1.3 `hidePayloads`). */
export function payloadsHidden(req: FastifyRequest): boolean {
  return (req as unknown as Record<symbol, boolean | undefined>)[HIDE] === true;
}
