import { performance } from 'node:perf_hooks';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { UnavailableError } from '../core/errors';
import { errorBody, mapError } from '../http/error-envelope';
import { isLongLived } from '../http/long-lived';
import { type BodyTiming, bodyTimingOf, retryAdviceOf } from '../http/request-notes';

/** The claim route (its long poll may legitimately wait `waitMs` before answering). */
const CLAIM_PATH = /^\/queues\/[^/?]+\/claim(\?|$)/;

const TIMER = Symbol('sluice.answerDeadline');
/** The process's load when the request arrived: event-loop idle time and body parse time so far, ms. */
const LOAD = Symbol('sluice.answerDeadlineLoad');
type Armed = FastifyRequest & { [TIMER]?: NodeJS.Timeout; [LOAD]?: { idleMs: number; parseMs: number } };

/** What the deadline reads of the process: the time spent parsing bodies so far (src/server/body-budget.ts), ms. */
export interface ParseClock {
  readonly parseMsTotal: number;
}

/**
 * The answer deadline (HTTP_ANSWER_TIMEOUT_MS): a request that has no answer
 * `timeoutMs` after it arrived is answered 503 `unavailable` in the error
 * envelope, with `Retry-After: 1`. A claim's long poll gets its `waitMs` on top.
 *
 * Two causes, and the message says which, from what the process measured
 * over the request's wait:
 * - the store it waits on (Redis, PostgreSQL) is stalled: a frozen or swapping
 *   Redis keeps its socket open, so ioredis waits for the reply without end;
 * - this process's event loop was busy most of the wait (reading, parsing and
 *   validating large bodies of other requests, writing their answers): the
 *   message gives the busy time, how much of it went to parsing bodies, and
 *   where this request's own body was (bytes, read, waiting to be parsed,
 *   parsed).
 *
 * What the 503 means for what the request wrote:
 * - its body not yet handed to its route (still arriving, or waiting to be
 *   parsed): the body is dropped (json-body.ts: the route never runs), and
 *   the message says nothing was written: send it again;
 * - else the outcome is unknown, never "nothing happened": a command it sent
 *   stays queued on the Redis connection and may still run when Redis answers
 *   again. The route's advice (src/http/request-notes.ts `adviseRetry`: POST
 *   /flows names its flow id in `details`) or the generic one: retrying is safe
 *   where the contract makes it so (`POST /jobs` with the same idempotency
 *   key, a lease call with the same lock token). No request is answered 2xx
 *   before its write has landed: the route's own answer, sent once its Redis
 *   reply came, is dropped when the deadline answered first.
 *
 * Cost on the hot path: one timer and two numbers per request, cleared in
 * `onResponse`; no Redis round trip. `arm` is called by the server's first
 * `onRequest` hook for the requests it lets through (not the ops endpoints);
 * Server-Sent Events (the other long-lived route) are never armed.
 */
export function answerDeadline(fastify: FastifyInstance, timeoutMs: number, parses: ParseClock = { parseMsTotal: 0 }): { arm(req: FastifyRequest, reply: FastifyReply): void } {
  if (timeoutMs <= 0) return { arm: () => undefined };
  fastify.addHook('onResponse', (req: FastifyRequest, _reply: FastifyReply, done: () => void) => {
    const t = (req as Armed)[TIMER];
    if (t) clearTimeout(t);
    done();
  });
  const arm = (req: FastifyRequest, reply: FastifyReply, startedAt = Date.now(), delayMs = timeoutMs): void => {
    (req as Armed)[TIMER] = setTimeout(() => {
      (req as Armed)[TIMER] = undefined;
      if (reply.sent || reply.raw.headersSent || reply.raw.destroyed) return;
      if (CLAIM_PATH.test(req.url)) {
        // The long poll's own wait comes first (the body is parsed by now, else it has none).
        const waitMs = Number((req.body as { waitMs?: unknown } | undefined)?.waitMs) || 0;
        const left = startedAt + waitMs + timeoutMs - Date.now();
        if (left > 0) return arm(req, reply, startedAt, left);
      }
      const body = bodyTimingOf(req);
      // Dropped: its route never ran, nor will.
      const dropped = body?.abandon() ?? false;
      const advice = dropped ? undefined : retryAdviceOf(req);
      const m = mapError(new UnavailableError(deadlineMessage(timeoutMs, startedAt, (req as Armed)[LOAD], parses.parseMsTotal, body, dropped, advice?.message)));
      const headers: Record<string, string> = { ...m.headers, 'retry-after': '1' };
      // A body still arriving is not read further.
      if (body && !body.readTo) headers.connection = 'close';
      void reply
        .status(m.status)
        .headers(headers)
        .send(errorBody({ ...m, details: advice?.details ?? [] }, String(req.id)));
    }, delayMs);
  };
  return {
    arm: (req, reply) => {
      if (isLongLived(req.url) && !CLAIM_PATH.test(req.url)) return;
      (req as Armed)[LOAD] = { idleMs: performance.nodeTiming.idleTime, parseMs: parses.parseMsTotal };
      arm(req, reply);
    },
  };
}

/** The 503's message: the cause (store or busy loop), this request's body, what was written. */
export function deadlineMessage(
  timeoutMs: number,
  startedAt: number,
  load: { idleMs: number; parseMs: number } | undefined,
  parseMsTotal: number,
  body: BodyTiming | undefined,
  dropped: boolean,
  advice: string | undefined,
): string {
  const now = Date.now();
  const waited = now - startedAt;
  const busy = load ? Math.max(0, Math.round(waited - (performance.nodeTiming.idleTime - load.idleMs))) : 0;
  const parsing = load ? Math.round(parseMsTotal - load.parseMs) : 0;
  const cause =
    busy * 2 >= waited
      ? `this process was busy ${busy} ms of the ${waited} ms waited (${parsing} ms of it parsing request bodies, the rest validating, writing and answering requests), not waiting on the store`
      : `the store is not answering (this process was busy ${busy} ms of the ${waited} ms waited)`;
  let own = '';
  if (body) {
    const state = !body.readTo
      ? `still arriving after ${now - body.readFrom} ms`
      : !body.parseTo
        ? `read in ${body.readTo - body.readFrom} ms, waiting ${now - body.readTo} ms for its turn to be parsed`
        : `read in ${body.readTo - body.readFrom} ms, parsed in ${body.parseTo - body.parseFrom} ms after waiting ${body.parseFrom - body.readTo} ms for its turn`;
    own = `; this request's body (${body.bytes} bytes): ${state}`;
  }
  const outcome = dropped
    ? 'nothing of this request was written (its body never reached its route): send it again'
    : (advice ?? 'what this request wrote may still land: retry with the same idempotency key or lock token');
  return `no answer within ${timeoutMs} ms (HTTP_ANSWER_TIMEOUT_MS): ${cause}${own}; ${outcome}`;
}
