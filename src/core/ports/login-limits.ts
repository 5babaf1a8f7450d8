/** Who a login failure counter counts: a user (by the SHA-256 of its lower-cased name) or a client address bucket. */
export type LoginCounter = 'user' | 'address';

/**
 * Failed-login counters shared by every api replica (src/auth/login-limiter.ts):
 * one counter per (kind, id), expiring one window after its first count.
 * Each method touches one counter (Cluster-safe).
 * Implemented by `src/redis/stores/login-attempts.ts`.
 */
export abstract class LoginAttempts {
  /**
   * Counts one attempt, atomically: the window (`windowMs`) is set on the first count only.
   * @returns the count after this one and the ms left in the window (≤ 0 when the counter has no expiry).
   * @throws Error when the step was aborted; the store's error when unreachable.
   */
  abstract count(kind: LoginCounter, id: string, windowMs: number): Promise<{ n: number; ttlMs: number }>;
  /** Forgets the counter. */
  abstract reset(kind: LoginCounter, id: string): Promise<void>;
  /**
   * Takes one count back; a counter whose window ended meanwhile (so the
   * decrement made it without expiry) is deleted.
   */
  abstract uncount(kind: LoginCounter, id: string): Promise<void>;
}
