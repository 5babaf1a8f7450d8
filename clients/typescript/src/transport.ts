import { randomUUID } from 'node:crypto';
import { ConnectionError, parseRetryAfter, TimeoutError } from './errors';

/** Retries of one call: at most `max` more attempts, full-jitter exponential backoff from `baseMs`, each wait ≤ `maxMs` (ms). */
export interface RetryPolicy {
  max: number;
  baseMs: number;
  maxMs: number;
}

export const DEFAULT_RETRIES: RetryPolicy = { max: 5, baseMs: 200, maxMs: 10_000 };

/** How one call may be sent again. */
export interface CallOptions {
  /**
   * True when sending the request twice does no harm (GET, PUT, DELETE, the
   * lease calls fenced by their lock token, an enqueue with an idempotency
   * key): then a 503, a timeout or a connection error is retried too. A
   * non-idempotent call is retried only on 429 (refused before anything ran).
   */
  idempotent: boolean;
  /** Per attempt, ms (default: the client's `timeoutMs`). */
  timeoutMs?: number;
  /** The caller's signal: aborts the call and its waits, rejecting with the signal's reason. */
  signal?: AbortSignal;
  /** Extra request headers (e.g. `traceparent`). */
  headers?: Record<string, string>;
}

export interface TransportOptions {
  timeoutMs: number;
  retries: RetryPolicy;
  /** The fetch to send with (default globalThis.fetch). */
  fetch?: typeof fetch;
  /** Called before each retry's wait (tests, logging): the attempt that failed (1-based), the wait in ms and why. */
  onRetry?: (info: { attempt: number; delayMs: number; reason: string; method: string; url: string }) => void;
}

/**
 * Wraps fetch for one call: a timeout per attempt (AbortSignal.timeout), an
 * `X-Request-Id` kept across its attempts, and retries with backoff as
 * {@link CallOptions.idempotent} allows. A `Retry-After` on a 429/503 sets
 * the wait; one longer than `retries.maxMs` is not waited out (the answer
 * goes back to the caller, whose error carries `retryAfterMs`).
 * The returned fetch buffers the body, so the timeout covers the whole exchange.
 * @throws TimeoutError / ConnectionError (status 0) when no answer came after the retries;
 *   the caller's abort reason when `call.signal` fires.
 */
export function callFetch(opts: TransportOptions, call: CallOptions): (req: Request) => Promise<Response> {
  const baseFetch = opts.fetch ?? globalThis.fetch;
  const timeoutMs = call.timeoutMs ?? opts.timeoutMs;
  return async (req: Request) => {
    const body = req.body ? await req.arrayBuffer() : undefined;
    const headers = new Headers(req.headers);
    for (const [k, v] of Object.entries(call.headers ?? {})) headers.set(k, v);
    if (!headers.has('x-request-id')) headers.set('x-request-id', randomUUID());
    const requestId = headers.get('x-request-id');
    for (let attempt = 1; ; attempt++) {
      call.signal?.throwIfAborted();
      const timeout = AbortSignal.timeout(timeoutMs);
      const signal = call.signal ? AbortSignal.any([call.signal, timeout]) : timeout;
      let reason: string;
      let retryAfterMs: number | null = null;
      try {
        const res = await baseFetch(req.url, { method: req.method, headers, body, signal, redirect: 'follow' });
        const buffered = await bufferResponse(res);
        const retryable = buffered.status === 429 || (buffered.status === 503 && call.idempotent);
        if (!retryable) return buffered;
        retryAfterMs = parseRetryAfter(buffered.headers.get('retry-after'));
        if (attempt > opts.retries.max || (retryAfterMs !== null && retryAfterMs > opts.retries.maxMs)) return buffered;
        reason = `HTTP ${buffered.status}`;
      } catch (e) {
        if (call.signal?.aborted) throw call.signal.reason;
        const timedOut = timeout.aborted;
        const err = timedOut
          ? new TimeoutError(`${req.method} ${pathOf(req.url)}: no answer within ${timeoutMs} ms`, 0, 'timeout', [], requestId, { cause: e })
          : new ConnectionError(`${req.method} ${pathOf(req.url)}: ${causeOf(e)}`, 0, 'connection_failed', [], requestId, { cause: e });
        if (!call.idempotent || attempt > opts.retries.max) throw err;
        reason = err.message;
      }
      const delayMs = retryAfterMs ?? backoffMs(attempt, opts.retries);
      opts.onRetry?.({ attempt, delayMs, reason, method: req.method, url: req.url });
      await sleep(delayMs, call.signal);
    }
  };
}

/** Full jitter: random in [0, min(maxMs, baseMs·2^(attempt−1))] ms. */
export function backoffMs(attempt: number, p: RetryPolicy): number {
  return Math.round(Math.random() * Math.min(p.maxMs, p.baseMs * 2 ** (attempt - 1)));
}

/** Resolves after `ms`; rejects with the signal's reason when it fires first. */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const onAbort = () => {
      clearTimeout(t);
      reject(signal!.reason);
    };
    const t = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}

async function bufferResponse(res: Response): Promise<Response> {
  const empty = res.status === 204 || res.status === 304 || !res.body;
  const data = empty ? null : await res.arrayBuffer();
  return new Response(data, { status: res.status, statusText: res.statusText, headers: res.headers });
}

function pathOf(url: string): string {
  try {
    return new URL(url).pathname;
  } catch {
    return url;
  }
}

/** fetch's "fetch failed" hides the reason in `cause` (ECONNREFUSED, ...). */
function causeOf(e: unknown): string {
  const c = (e as { cause?: { code?: string; message?: string } })?.cause;
  return c?.code ?? c?.message ?? (e instanceof Error ? e.message : String(e));
}
