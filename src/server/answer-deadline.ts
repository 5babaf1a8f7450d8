import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { UnavailableError } from '../core/errors';
import { errorBody, mapError } from '../http/error-envelope';
import { isLongLived } from '../http/long-lived';

/** The claim route (its long poll may legitimately wait `waitMs` before answering). */
const CLAIM_PATH = /^\/queues\/[^/?]+\/claim(\?|$)/;

const TIMER = Symbol('sluice.answerDeadline');
type Armed = FastifyRequest & { [TIMER]?: NodeJS.Timeout };

/**
 * The answer deadline (HTTP_ANSWER_TIMEOUT_MS): a request that has no answer
 * `timeoutMs` after it arrived — the store it waits on (Redis, PostgreSQL)
 * is stalled: a frozen or swapping Redis keeps its socket open, so ioredis
 * waits for the reply without end — is answered 503 `unavailable` in the
 * error envelope, with `Retry-After: 1`. A claim's long poll gets its
 * `waitMs` on top.
 *
 * What the 503 means: the outcome is unknown, never "nothing happened". The
 * command the request sent stays queued on the Redis connection and may
 * still run when Redis answers again, so a write answered this way may land
 * later. Retrying is safe where the contract makes it so: `POST /jobs` with
 * the same idempotency key, a lease call with the same lock token (a repeated
 * complete answers 200 with the job). No request is answered 2xx before its
 * write has landed: the route's own answer, sent once its Redis reply came,
 * is dropped when the deadline answered first.
 *
 * Cost on the hot path: one timer per request, cleared in `onResponse`; no
 * Redis round trip. `arm` is called by the server's first `onRequest` hook
 * for the requests it lets through (not the ops endpoints); Server-Sent
 * Events (the other long-lived route) are never armed.
 */
export function answerDeadline(fastify: FastifyInstance, timeoutMs: number): { arm(req: FastifyRequest, reply: FastifyReply): void } {
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
      const m = mapError(
        new UnavailableError(
          `no answer within ${timeoutMs} ms (HTTP_ANSWER_TIMEOUT_MS): the store is not answering; ` +
            'what this request wrote may still land: retry with the same idempotency key or lock token',
        ),
      );
      void reply
        .status(m.status)
        .headers({ ...m.headers, 'retry-after': '1' })
        .send(errorBody(m, String(req.id)));
    }, delayMs);
  };
  return {
    arm: (req, reply) => {
      if (isLongLived(req.url) && !CLAIM_PATH.test(req.url)) return;
      arm(req, reply);
    },
  };
}
