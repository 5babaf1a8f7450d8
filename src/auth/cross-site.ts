import { createHash } from 'node:crypto';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { isLoopbackHost, type SluiceConfig } from '../config/config';
import { ForbiddenError } from '../core/errors';

const STATE_CHANGING = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);

/** The host part of a Host header (port and IPv6 brackets handled), lower case, no trailing dot. */
export function hostName(hostHeader: string): string {
  const h = hostHeader.trim().toLowerCase();
  if (h.startsWith('[')) return h.slice(0, h.indexOf(']') + 1);
  return h.replace(/:\d*$/, '').replace(/\.$/, '');
}

/**
 * API.md v1.1 cross-site rules, whatever AUTH is (the 415 rule lives in the
 * body parser: only `application/json` bodies are read):
 * - a state-changing request (POST, PUT, PATCH, DELETE) whose `Origin` is present
 *   and is neither this server's origin (same host and port as the `Host`
 *   header; the scheme is not compared, so TLS ending at a proxy works) nor
 *   listed in CORS_ORIGINS → 403 `forbidden`; `Origin: null` is refused too;
 * - with AUTH=off, a `Host` other than a loopback name, the bound HOST or one of
 *   ALLOWED_HOSTS → 403 (DNS rebinding: a page on an attacker's name that
 *   resolves to 127.0.0.1 would otherwise act as the local admin).
 * @returns the error to answer with, or null when the request may go on.
 */
export function crossSiteRefusal(config: Pick<SluiceConfig, 'auth' | 'host' | 'corsOrigins' | 'allowedHosts'>, method: string, headers: Record<string, string | string[] | undefined>): ForbiddenError | null {
  const host = typeof headers.host === 'string' ? headers.host : '';
  if (!config.auth && host !== '') {
    const name = hostName(host);
    const bare = name.replace(/^\[|\]$/g, '');
    if (!isLoopbackHost(bare) && bare !== config.host.toLowerCase().replace(/^\[|\]$/g, '') && !config.allowedHosts.has(name) && !config.allowedHosts.has(bare)) {
      return new ForbiddenError(`Host ${JSON.stringify(name.slice(0, 100))} is not allowed while AUTH is off (add it to ALLOWED_HOSTS)`);
    }
  }
  if (STATE_CHANGING.has(method)) {
    const origin = headers.origin;
    if (typeof origin === 'string') {
      const o = origin.trim().toLowerCase();
      if (!config.corsOrigins.has(o) && !sameOrigin(o, host)) {
        return new ForbiddenError('cross-site request refused: its Origin is not this server nor listed in CORS_ORIGINS');
      }
    }
  }
  return null;
}

/** True when `origin` names the host (and port) this request was sent to: URL's `host` omits default ports, as browsers' Host headers do. */
function sameOrigin(origin: string, host: string): boolean {
  if (!host) return false;
  try {
    const u = new URL(origin);
    return (u.protocol === 'http:' || u.protocol === 'https:') && u.host === host.trim().toLowerCase();
  } catch {
    return false;
  }
}

/** Hashes of the inline `<script>` and `<style>` blocks of an HTML page, for its CSP. */
function inlineHashes(html: string, tag: 'script' | 'style'): string[] {
  const out: string[] = [];
  const re = tag === 'script' ? /<script(?![^>]*\bsrc=)[^>]*>([\s\S]*?)<\/script>/gi : /<style[^>]*>([\s\S]*?)<\/style>/gi;
  for (const m of html.matchAll(re)) out.push(`'sha256-${createHash('sha256').update(m[1], 'utf8').digest('base64')}'`);
  return out;
}

/**
 * The Content-Security-Policy of an HTML page: nothing from elsewhere, no
 * framing, and inline scripts and styles only where the page itself carries
 * them (allowed by their hashes, never 'unsafe-inline').
 */
export function contentSecurityPolicy(html: string): string {
  const scripts = inlineHashes(html, 'script');
  const styles = inlineHashes(html, 'style');
  return [
    "default-src 'self'",
    `script-src 'self'${scripts.length ? ' ' + scripts.join(' ') : ''}`,
    `style-src 'self'${styles.length ? ' ' + styles.join(' ') : ''}`,
    "img-src 'self' data:",
    "connect-src 'self'",
    "object-src 'none'",
    "base-uri 'none'",
    "form-action 'self'",
    "frame-ancestors 'none'",
  ].join('; ');
}

/**
 * Registers the cross-site rules (onRequest) and the security headers
 * (onSend): every response gets `X-Content-Type-Options: nosniff`; every HTML
 * response (the dashboard, `/docs`) also a CSP, `X-Frame-Options: DENY` and
 * `Referrer-Policy: no-referrer`.
 * @param refuse answers a refused request in the error envelope.
 */
export function registerCrossSite(fastify: FastifyInstance, config: SluiceConfig, refuse: (req: FastifyRequest, reply: FastifyReply, e: ForbiddenError) => void): void {
  fastify.addHook('onRequest', (req: FastifyRequest, reply: FastifyReply, done: (err?: Error) => void) => {
    const e = crossSiteRefusal(config, req.method, req.headers);
    if (e) return refuse(req, reply, e);
    done();
  });
  fastify.addHook('onSend', (_req: FastifyRequest, reply: FastifyReply, payload: unknown, done: (err: Error | null, p?: unknown) => void) => {
    void reply.header('x-content-type-options', 'nosniff');
    const type = reply.getHeader('content-type');
    if (typeof type === 'string' && type.startsWith('text/html')) {
      // A page that sets its own (stricter) policy keeps it; framing is refused either way.
      const own = reply.getHeader('content-security-policy');
      if (typeof own !== 'string') void reply.header('content-security-policy', contentSecurityPolicy(typeof payload === 'string' ? payload : ''));
      else if (!/frame-ancestors/.test(own)) void reply.header('content-security-policy', `${own}; frame-ancestors 'none'`);
      void reply.header('x-frame-options', 'DENY');
      void reply.header('referrer-policy', 'no-referrer');
    }
    done(null, payload);
  });
}
