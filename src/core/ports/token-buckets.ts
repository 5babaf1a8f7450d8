/**
 * Token buckets shared by every api replica (per API key: src/auth/key-rate-limiter.ts),
 * on the store's clock. Implemented by `src/redis/stores/token-buckets.ts` (lua/takeToken-1.lua).
 */
export abstract class TokenBuckets {
  /**
   * Takes one token from the bucket of `keyId` (`perSec` tokens a second, at most `burst`), atomically.
   * @returns 0 when a token was taken, else how long until one is available, ms (nothing taken).
   * @throws the store's error when it cannot be reached.
   */
  abstract take(keyId: string, perSec: number, burst: number): Promise<number>;
}
