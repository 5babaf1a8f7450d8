import type { FastifyRequest } from 'fastify';
import { ForbiddenError } from '../core/errors';
import { SESSION_TOKEN_PATTERN } from '../core/user-credentials';

/** The dashboard's session cookie. */
export const SESSION_COOKIE = 'sluice_session';

const STATE_CHANGING = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);

/**
 * The session token a `Cookie` header carries, or null when it carries none
 * of the right form. With several `sluice_session` cookies (one set by a
 * sibling domain, say) the first well-formed one counts, as browsers send
 * the most specific first.
 */
export function sessionToken(cookieHeader: string | string[] | undefined): string | null {
  if (typeof cookieHeader !== 'string' || cookieHeader.length > 16_384) return null;
  for (const part of cookieHeader.split(';')) {
    const eq = part.indexOf('=');
    if (eq < 0 || part.slice(0, eq).trim() !== SESSION_COOKIE) continue;
    const v = part.slice(eq + 1).trim().replace(/^"(.*)"$/, '$1');
    if (SESSION_TOKEN_PATTERN.test(v)) return v;
  }
  return null;
}

/** True when the `Cookie` header names the session cookie at all (well-formed or not). */
export function hasSessionCookie(cookieHeader: string | string[] | undefined): boolean {
  return typeof cookieHeader === 'string' && new RegExp(`(^|;)\\s*${SESSION_COOKIE}=`).test(cookieHeader);
}

/**
 * The `Set-Cookie` value of a session: `HttpOnly` (no script reads it),
 * `SameSite=Strict` (no other site's page sends it), `Path=/`, `Max-Age` =
 * the session's absolute lifetime, and `Secure` when the request came over
 * TLS (directly, or through a proxy trusted with TRUST_PROXY that says so in
 * `X-Forwarded-Proto`). `token` null clears the cookie (logout).
 */
export function sessionCookie(token: string | null, opts: { secure: boolean; maxAgeMs: number }): string {
  const parts = [`${SESSION_COOKIE}=${token ?? ''}`, 'Path=/', 'HttpOnly', 'SameSite=Strict', `Max-Age=${token ? Math.floor(opts.maxAgeMs / 1000) : 0}`];
  if (opts.secure) parts.push('Secure');
  return parts.join('; ');
}

/** True when the request reached Sluice over TLS (Fastify's `protocol`, which honours TRUST_PROXY). */
export function overTls(req: FastifyRequest): boolean {
  return req.protocol === 'https';
}

/**
 * CSRF defence in depth for cookie-authenticated requests (a cookie is sent
 * by the browser whoever made the page): a state-changing request must carry
 * `Origin` (whose value the cross-site rule, src/auth/cross-site.ts, has
 * already checked is this server or CORS_ORIGINS) or `Sec-Fetch-Site:
 * same-origin`. Browsers send one of them on every such request they make
 * themselves; a request that has neither did not come from our own page.
 * @returns the error to refuse with, or null.
 */
export function cookieCsrfRefusal(method: string, headers: Record<string, string | string[] | undefined>): ForbiddenError | null {
  if (!STATE_CHANGING.has(method)) return null;
  if (typeof headers.origin === 'string' && headers.origin !== '') return null;
  if (headers['sec-fetch-site'] === 'same-origin') return null;
  return new ForbiddenError('a state-changing request signed in by the session cookie needs an Origin header or Sec-Fetch-Site: same-origin');
}
