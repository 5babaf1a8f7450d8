import * as http from 'node:http';
import * as https from 'node:https';
import { isIP, type Socket } from 'node:net';
import { checkAddress, normalizeHost } from '../../../core/address-policy';
import { UnrecoverableError } from '../../../core/handler';
import { AddressRefusedError, guardedLookup, systemResolver, type AddressCheck, type Resolver } from './guarded-lookup';
import type { HttpMethod, HttpRequestSpec } from './payload';

/** Redirects followed at most; one more is refused (unrecoverable). */
export const MAX_REDIRECTS = 3;
/** Response body kept at most, bytes; the rest is not read. */
export const MAX_RESPONSE_BODY_BYTES = 64 * 1024;

/** The job's result on a 2xx: body as UTF-8 text, `truncated` when it was longer than 64 KiB. */
export interface HttpRequestResult {
  status: number;
  /** Response headers, lower-case names, repeated ones joined by ", "; `set-cookie` is dropped. */
  headers: Record<string, string>;
  body: string;
  truncated: boolean;
}

export interface HttpRequestClientOptions {
  /** Normalized HTTP_HANDLER_ALLOW_HOSTS: these hosts may resolve to any address. */
  allowHosts?: Iterable<string>;
  /** Name resolution (tests inject one; default: the system resolver). */
  resolve?: Resolver;
  /** Address policy (tests may widen it; default: core/address-policy). */
  check?: AddressCheck;
}

/** Credentials a cross-origin redirect must not carry (fetch drops Authorization; we drop the others too). */
const CREDENTIAL_HEADERS = ['authorization', 'cookie', 'proxy-authorization'];
/** Request-body headers dropped when a redirect turns the request into a body-less GET (fetch "request-body-header name"). */
const BODY_HEADERS = ['content-type', 'content-encoding', 'content-language', 'content-location'];
const REDIRECTS = new Set([301, 302, 303, 307, 308]);

interface HopResponse {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: Buffer;
  truncated: boolean;
}

/** Raised inside a hop when the whole request ran out of time (retryable). */
class RequestTimeoutError extends Error {}

/**
 * Performs one `http.request` job: the request, its redirects (at most 3,
 * each host re-checked), size and time caps. Outcome:
 * - 2xx → HttpRequestResult;
 * - 5xx, timeout, connection error → Error (the attempt is retried);
 * - any other status (4xx, 3xx that is not a followable redirect), a 4th
 *   redirect, a refused address → UnrecoverableError.
 *
 * SSRF: an IP-literal host is judged before any socket exists; a host name is
 * resolved once by the socket's own `lookup` (guardedLookup), so the address
 * judged is the address connected to; the connected socket's remote address
 * is judged again as a second line. HTTP_PROXY and friends are ignored (each
 * request has its own agent, never a proxy).
 */
export class HttpRequestClient {
  private readonly allowHosts: Set<string>;
  private readonly resolve: Resolver;
  private readonly check: AddressCheck;

  constructor(opts: HttpRequestClientOptions = {}) {
    this.allowHosts = new Set(opts.allowHosts ?? []);
    this.resolve = opts.resolve ?? systemResolver;
    this.check = opts.check ?? checkAddress;
  }

  /**
   * Runs the request within `spec.timeoutMs` (all hops, connect and body
   * included) and until `signal` aborts (the job's timeout or cancellation).
   * `log` receives method, origin and status only: never header values,
   * bodies, paths or query strings (they carry secrets).
   */
  async execute(spec: HttpRequestSpec, signal?: AbortSignal, log: (line: string) => void = () => undefined): Promise<HttpRequestResult> {
    const controller = new AbortController();
    const timer = setTimeout(() => controller.abort(new RequestTimeoutError(`http.request: no complete response within timeoutMs=${spec.timeoutMs}`)), spec.timeoutMs);
    const onAbort = () => controller.abort(new Error(`http.request: aborted (${String(signal?.reason)})`));
    if (signal?.aborted) onAbort();
    else signal?.addEventListener('abort', onAbort, { once: true });
    try {
      return await this.follow(spec, controller.signal, log);
    } finally {
      clearTimeout(timer);
      signal?.removeEventListener('abort', onAbort);
    }
  }

  private async follow(spec: HttpRequestSpec, signal: AbortSignal, log: (line: string) => void): Promise<HttpRequestResult> {
    let url = new URL(spec.url.href);
    let method: HttpMethod = spec.method;
    let body = spec.body;
    const headers = { ...spec.headers };
    for (let redirects = 0; ; redirects++) {
      const res = await this.hop(url, method, headers, body, signal);
      log(`${method} ${url.origin} → ${res.status}`);
      const location = res.headers.location;
      if (REDIRECTS.has(res.status) && location) {
        if (redirects === MAX_REDIRECTS) throw new UnrecoverableError(`http.request: more than ${MAX_REDIRECTS} redirects (last from ${url.origin})`);
        let next: URL;
        try {
          next = new URL(location, url);
        } catch {
          throw new UnrecoverableError(`http.request: ${url.origin} redirected to an invalid URL`);
        }
        if (next.protocol !== 'http:' && next.protocol !== 'https:') throw new UnrecoverableError(`http.request: ${url.origin} redirected to a ${next.protocol} URL`);
        if (next.username || next.password) throw new UnrecoverableError(`http.request: ${url.origin} redirected to a URL with credentials`);
        next.hash = '';
        // fetch: 303 makes anything but HEAD a GET; 301/302 make a POST a GET; 307/308 keep method and body.
        if ((res.status === 303 && method !== 'HEAD') || ((res.status === 301 || res.status === 302) && method === 'POST')) {
          method = 'GET';
          body = null;
          for (const h of BODY_HEADERS) delete headers[h];
        }
        if (next.origin !== url.origin) for (const h of CREDENTIAL_HEADERS) delete headers[h];
        url = next;
        continue;
      }
      if (res.status >= 200 && res.status <= 299) {
        return { status: res.status, headers: flattenHeaders(res.headers), body: res.body.toString('utf8'), truncated: res.truncated };
      }
      if (res.status >= 500) throw new Error(`http.request: ${method} ${url.origin} answered ${res.status}`);
      throw new UnrecoverableError(`http.request: ${method} ${url.origin} answered ${res.status}`);
    }
  }

  /** One request/response exchange, no redirect handling. */
  private hop(url: URL, method: HttpMethod, headers: Record<string, string>, body: Buffer | null, signal: AbortSignal): Promise<HopResponse> {
    const host = normalizeHost(url.hostname);
    const exempt = this.allowHosts.has(host);
    const literal = isIP(host) !== 0;
    if (literal && !exempt) {
      const v = this.check(host);
      if (!v.allowed) return Promise.reject(new AddressRefusedError(url.host, v.rule));
    }
    if (signal.aborted) return Promise.reject(abortError(signal));
    const isHttps = url.protocol === 'https:';
    const agent = isHttps ? new https.Agent({ keepAlive: false }) : new http.Agent({ keepAlive: false });
    const outHeaders: Record<string, string> = { 'user-agent': 'sluice-http-request', ...headers, connection: 'close' };
    if (body) outHeaders['content-length'] = String(body.length);
    return new Promise<HopResponse>((resolve, reject) => {
      let settled = false;
      const finish = (err: Error | null, value?: HopResponse) => {
        if (settled) return;
        settled = true;
        signal.removeEventListener('abort', onAbort);
        if (err) {
          req.destroy();
          reject(classify(err, url));
        } else resolve(value!);
      };
      const onAbort = () => finish(abortError(signal));
      const req = (isHttps ? https : http).request({
        protocol: url.protocol,
        hostname: host,
        port: url.port || undefined,
        path: `${url.pathname}${url.search}`,
        method,
        headers: outHeaders,
        agent,
        lookup: literal ? undefined : guardedLookup(url.host, exempt, this.resolve, this.check),
        servername: isHttps && !literal ? host : undefined,
      });
      signal.addEventListener('abort', onAbort, { once: true });
      req.on('socket', (socket: Socket) => {
        // Second line: whatever the connect path, the peer must pass the policy.
        socket.once('connect', () => {
          const peer = socket.remoteAddress;
          if (exempt || !peer) return;
          const v = this.check(peer);
          if (!v.allowed) finish(new AddressRefusedError(url.host, v.rule));
        });
      });
      req.on('error', (err) => finish(err));
      req.on('response', (res) => {
        const status = res.statusCode ?? 0;
        if (REDIRECTS.has(status) || method === 'HEAD') {
          // A redirect's body is never read: hang up rather than drain what could be endless.
          finish(null, { status, headers: res.headers, body: Buffer.alloc(0), truncated: false });
          req.destroy();
          return;
        }
        const chunks: Buffer[] = [];
        let size = 0;
        res.on('data', (chunk: Buffer) => {
          if (settled) return;
          const room = MAX_RESPONSE_BODY_BYTES - size;
          if (chunk.length > room) {
            chunks.push(chunk.subarray(0, room));
            size += room;
            finish(null, { status, headers: res.headers, body: Buffer.concat(chunks, size), truncated: true });
            res.destroy();
            return;
          }
          chunks.push(chunk);
          size += chunk.length;
        });
        res.on('end', () => finish(null, { status, headers: res.headers, body: Buffer.concat(chunks, size), truncated: false }));
        res.on('error', (err) => finish(err));
        res.on('close', () => {
          if (!res.complete) finish(new Error('response closed before its end'));
        });
      });
      req.end(body ?? undefined);
    });
  }
}

function abortError(signal: AbortSignal): Error {
  return signal.reason instanceof Error ? signal.reason : new Error('http.request: aborted');
}

/** Maps a hop's failure to the job outcome; socket errors keep only their code (Node's messages name the peer address). */
function classify(err: Error, url: URL): Error {
  if (err instanceof UnrecoverableError || err instanceof RequestTimeoutError) return err;
  if (err.message.startsWith('http.request: aborted')) return err;
  const code = (err as NodeJS.ErrnoException).code;
  return new Error(`http.request: connection error to ${url.origin}: ${code ?? err.message}`);
}

function flattenHeaders(h: http.IncomingHttpHeaders): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries(h)) {
    if (name === 'set-cookie' || value === undefined) continue;
    out[name] = Array.isArray(value) ? value.join(', ') : value;
  }
  return out;
}
