import { RateLimitedError } from '../core/errors';
import type { TokenBuckets } from '../core/ports/token-buckets';

import { RATE_LIMIT_MAX, type RateLimit } from '../core/api-key';

export { RATE_LIMIT_MAX, type RateLimit };

/**
 * The token-bucket limit per API key (docs/security.md, "Limits per credential"), counted in Redis so
 * that it holds across api replicas ({@link TokenBuckets}): one call of lua/takeToken-1.lua per
 * request of a limited key (Redis TIME, atomic), nothing at all for a key
 * without a limit. A key's own `rateLimit` (set at `POST /keys`) overrides the
 * defaults (KEY_RATE_LIMIT_PER_SEC / KEY_RATE_LIMIT_BURST).
 */
export class KeyRateLimiter {
  private readonly defaults: RateLimit | null;

  constructor(
    private readonly buckets: TokenBuckets,
    perSec: number,
    burst: number,
  ) {
    this.defaults = perSec > 0 ? { perSec, burst: burst > 0 ? burst : perSec } : null;
  }

  /** True when KEY_RATE_LIMIT_PER_SEC is set (a key of its own limit is limited either way). */
  get hasDefaults(): boolean {
    return this.defaults !== null;
  }

  /** The limit of a key: its own, else the defaults, else null (unlimited). */
  limitOf(own: RateLimit | null | undefined): RateLimit | null {
    return own ?? this.defaults;
  }

  /**
   * Takes one token from the key's bucket.
   * @throws RateLimitedError (429, Retry-After = the wait rounded up to seconds) when the bucket is empty;
   *   rejects when Redis cannot be reached (503).
   */
  async take(keyId: string, limit: RateLimit): Promise<void> {
    const waitMs = await this.buckets.take(keyId, limit.perSec, limit.burst);
    if (waitMs > 0) {
      throw new RateLimitedError(`rate limit of this API key exceeded (${limit.perSec}/s, burst ${limit.burst}): retry in ${Math.ceil(waitMs / 1000)} s`, waitMs);
    }
  }
}
