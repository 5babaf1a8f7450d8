import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';

/**
 * API key secrets: `sk_` followed by 43 URL-safe base64 characters (256
 * random bits). Only the SHA-256 of a secret is ever stored: with 256 bits of
 * entropy no slow hash is needed (a brute force over the hash space is out of
 * reach), unlike passwords (argon2id).
 */
export const SECRET_PATTERN = /^sk_[A-Za-z0-9_-]{32,200}$/;

/** A new random secret (256 bits). */
export function newSecret(): string {
  return 'sk_' + randomBytes(32).toString('base64url');
}

/** SHA-256 of a secret, hex (64 characters): the key's identity at rest. */
export function hashSecret(secret: string): string {
  return createHash('sha256').update(secret, 'utf8').digest('hex');
}

/** Constant-time comparison of two hex hashes of equal length. */
export function sameHash(a: string, b: string): boolean {
  if (a.length !== b.length) return false;
  return timingSafeEqual(Buffer.from(a, 'utf8'), Buffer.from(b, 'utf8'));
}

/**
 * The bearer token of an `Authorization` header, or null when the header is
 * absent or not of the `Bearer <token>` form (scheme case-insensitive).
 */
export function bearerToken(header: string | string[] | undefined): string | null {
  if (typeof header !== 'string') return null;
  const m = /^Bearer[ \t]+(\S{1,512})[ \t]*$/i.exec(header);
  return m ? m[1] : null;
}

/** A token bucket: `perSec` requests per second on average, `burst` at once. */
export interface RateLimit {
  perSec: number;
  burst: number;
}

/** Bounds of a limit (env and `POST /keys`). */
export const RATE_LIMIT_MAX = 1_000_000;
