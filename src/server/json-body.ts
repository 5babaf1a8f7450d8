import type { IncomingMessage } from 'node:http';
import type { FastifyRequest } from 'fastify';
import { SluiceError, UnavailableError, ValidationError } from '../core/errors';
import { findBadJsonString, jsonDepthExceeds, MAX_JSON_DEPTH } from '../core/json-guard';
import { heavyTurn } from '../http/heavy-turns';
import { type BodyTiming, setBodyTiming } from '../http/request-notes';
import type { BodyBudget } from './body-budget';

/** Bodies from this size on are parsed in a heavy turn of their own (src/http/heavy-turns.ts), bytes. */
export const QUEUED_PARSE_BYTES = 1_048_576;

/** Retry-After of a body refused because too many bytes are in flight, ms (rounded up to seconds). */
const BUSY_RETRY_AFTER_MS = 1000;

type Done = (err: Error | null, body?: unknown) => void;
/** Fastify's default JSON parser (secure-json-parse: `__proto__` and `constructor` keys refused). */
type JsonParser = (req: FastifyRequest, body: string, done: Done) => void;

/** The 400 of a refused string (NUL, lone surrogate, in a body, a query or a path) or an over-deep body. */
export function refused(what: string, detail: { path: string; message: string }): ValidationError {
  return new ValidationError(`${what}: ${detail.path || 'body'} ${detail.message}`, [detail]);
}

/** The declared Content-Length (Node's parser has checked its syntax), or null for a chunked body. */
function declaredLength(req: FastifyRequest): number | null {
  const h = req.headers['content-length'];
  return h === undefined ? null : Number(h);
}

/**
 * Fastify's parser of `application/json` bodies (src/server/http-app.ts):
 * - a body over its route's limit (`limitFor(url)`, src/server/body-limits.ts) is
 *   refused 413 `payload_too_large` before a byte is read when its Content-Length
 *   says so, else (chunked) as soon as the bytes received pass the limit;
 * - its bytes are taken from `budget` (MAX_INFLIGHT_BODY_BYTES) before reading
 *   (Content-Length) or as they arrive (chunked): past the bound, 503
 *   `unavailable` with Retry-After at once, the rest not read; they are given
 *   back once the body is parsed, refused, or its client went away (request
 *   timeout, reset) — never later;
 * - then the parse, as before: an empty body is no body, over-deep nesting,
 *   prototype-poisoning keys and NUL or lone-surrogate strings → 400. A body of
 *   {@link QUEUED_PARSE_BYTES} or more is parsed in a heavy turn of its own, and
 *   handed to its route in the next (src/http/heavy-turns.ts).
 * Fastify answers a refusal with `Connection: close`, so the client's unsent
 * bytes are never read.
 */
export function jsonBodyParser(opts: { budget: BodyBudget; limitFor: (url: string) => number; jsonParser: JsonParser }) {
  const { budget, limitFor, jsonParser } = opts;
  const tooLarge = (limit: number, req: FastifyRequest) => {
    budget.tooLarge();
    return new SluiceError('payload_too_large', `request body larger than ${limit} bytes, the limit of ${req.method} ${req.url.split('?')[0]}: not read`);
  };
  const busy = () =>
    Object.assign(
      new UnavailableError(`this server is reading and parsing ${budget.maxBytes} bytes of request bodies already (MAX_INFLIGHT_BODY_BYTES): retry in a moment; nothing was read or written`),
      { retryAfterMs: BUSY_RETRY_AFTER_MS },
    );

  return (req: FastifyRequest, payload: IncomingMessage, done: Done): void => {
    const limit = limitFor(req.url);
    const declared = declaredLength(req);
    if (declared !== null && declared > limit) return done(tooLarge(limit, req));
    if (declared === 0) return done(null, undefined);
    let held = 0;
    if (declared !== null) {
      if (!budget.take(declared)) return done(busy());
      held = declared;
    }
    const timing: BodyTiming = { bytes: 0, readFrom: Date.now(), readTo: 0, parseFrom: 0, parseTo: 0, handedAt: 0, abandon: () => abandon() };
    setBodyTiming(req, timing);
    const chunks: Buffer[] = [];
    let received = 0;
    let over = false;
    const release = () => {
      budget.give(held);
      held = 0;
    };
    const stop = () => {
      payload.removeListener('data', onData);
      payload.removeListener('end', onEnd);
      payload.removeListener('error', onGone);
      payload.removeListener('close', onGone);
    };
    const fail = (e: Error) => {
      if (over) return;
      over = true;
      stop();
      release();
      chunks.length = 0;
      done(e);
    };
    // The answer deadline gave up on the request (src/server/answer-deadline.ts): no route may run for it.
    // Fastify is not called back: the deadline's 503 is the answer, and the route never runs.
    const abandon = (): boolean => {
      if (timing.handedAt) return false;
      if (!over) {
        over = true;
        stop();
        release();
        chunks.length = 0;
      }
      return true;
    };
    const hand = (out: { err: Error | null; value?: unknown }) => {
      if (over) return;
      over = true;
      timing.handedAt = Date.now();
      done(out.err, out.value);
    };
    function onData(chunk: Buffer): void {
      if (over) return;
      received += chunk.length;
      timing.bytes = received;
      if (received > limit) return fail(tooLarge(limit, req));
      if (declared === null) {
        if (!budget.take(chunk.length)) return fail(busy());
        held += chunk.length;
      }
      chunks.push(chunk);
    }
    function onGone(err?: Error): void {
      // The client went away (reset, request timeout) before its last byte: nobody reads an answer.
      fail(Object.assign(err instanceof Error ? err : new Error('the request body was cut short'), { statusCode: 400 }));
    }
    function onEnd(): void {
      stop();
      timing.readTo = Date.now();
      if (declared !== null && received !== declared) return fail(Object.assign(new Error('the request body is not as long as its Content-Length'), { statusCode: 400 }));
      const state: ParseState = { text: '', err: null, settled: false };
      let next = 0;
      // The parse's next stage (decode and depth check, JSON.parse, the string check), or all that are left; its time counted.
      const stages = (all: boolean) => {
        const from = Date.now();
        if (!timing.parseFrom) timing.parseFrom = from;
        try {
          do {
            if (next === 0) {
              state.text = (chunks.length === 1 ? chunks[0] : Buffer.concat(chunks, received)).toString('utf8');
              chunks.length = 0;
            }
            PARSE_STAGES[next++](state, req, jsonParser);
          } while (all && !state.settled);
        } catch (e) {
          Object.assign(state, { err: e as Error, settled: true });
        } finally {
          timing.parseTo = Date.now();
          budget.parsed(timing.parseTo - from);
        }
        if (state.settled) {
          state.text = '';
          release();
        }
      };
      if (received < QUEUED_PARSE_BYTES) {
        stages(true);
        return hand(state);
      }
      // A large body: each stage of its parse a heavy step of its own, what the route does with it (validation...) in the next.
      void (async () => {
        while (!state.settled) {
          await heavyTurn(timing.readFrom);
          if (over) return;
          stages(false);
        }
        await heavyTurn(timing.readFrom);
        hand(state);
      })();
    }
    payload.on('data', onData);
    payload.on('end', onEnd);
    payload.on('error', onGone);
    payload.on('close', onGone);
    payload.resume();
  };
}

/** A body's parse, stage by stage: `settled` once `err` or `value` is final. */
interface ParseState {
  text: string;
  value?: unknown;
  err: Error | null;
  settled: boolean;
}

/**
 * The checks and the parse of a body's text, as before this reader, in
 * stages a large body runs one per heavy turn (each about a third of the
 * work: measured in docs/benchmarks.md "Large bodies"): an empty body is no
 * body, too deep → 400 (checked on the text: every later walk of the value
 * recurses); Fastify's parser (bad JSON, `__proto__`/`constructor` keys →
 * 400); a NUL or lone surrogate in a string → 400 naming it.
 */
const PARSE_STAGES: ((s: ParseState, req: FastifyRequest, jsonParser: JsonParser) => void)[] = [
  (s) => {
    if (s.text.trim() === '') return void Object.assign(s, { value: undefined, settled: true });
    if (jsonDepthExceeds(s.text)) {
      Object.assign(s, { err: refused('JSON body too deep', { path: '', message: `must not nest objects and arrays deeper than ${MAX_JSON_DEPTH} levels` }), settled: true });
    }
  },
  (s, req, jsonParser) => {
    // Fastify's default parser calls back synchronously.
    jsonParser(req, s.text, (err, value) => {
      if (err) Object.assign(s, { err, settled: true });
      else s.value = value;
    });
  },
  (s) => {
    const bad = findBadJsonString(s.value, s.text);
    if (bad) Object.assign(s, { err: refused('invalid string', bad), value: undefined });
    s.settled = true;
  },
];
