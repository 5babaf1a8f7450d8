import { hashSecret } from '../core/api-key';
import { SluiceError } from '../core/errors';
import type { LoginAttempts, LoginCounter } from '../core/ports/login-limits';

/** Failed logins allowed per username and per client address within {@link LOGIN_WINDOW_MS}. */
export const LOGIN_MAX_FAILURES = 5;
/** The window of the login limit, ms (15 minutes from the first failure counted). */
export const LOGIN_WINDOW_MS = 15 * 60_000;

/** Too many failed logins (HTTP 429 `rate_limited` with `Retry-After`). */
export class LoginRateLimitedError extends SluiceError {
  constructor(readonly retryAfterMs: number) {
    super('rate_limited', `too many failed logins: retry in ${Math.ceil(retryAfterMs / 1000)} s`);
  }
}

/** One login attempt in progress: counted before the password is checked. */
export interface LoginAttempt {
  /** The password was right: forgets the user's failures, and this attempt from the address's. */
  succeeded(): Promise<void>;
}

/**
 * The login limit (issue "Security"): at most {@link LOGIN_MAX_FAILURES}
 * failures per username and per client address per {@link LOGIN_WINDOW_MS},
 * counted in Redis ({@link LoginAttempts}) so every api replica shares them:
 * one counter per SHA-256 of the lower-cased username and one per
 * address bucket (src/core/user-credentials.ts `addressBucket`), each
 * expiring one window after its first failure.
 *
 * An attempt is counted *before* its password is checked and uncounted when
 * it succeeds, so concurrent attempts cannot get more than the limit of
 * guesses through between a check and a count. Past the limit the answer is
 * 429 whether the password is right or not. A success resets the user's
 * counter (not the address's: one right password must not buy an address
 * more guesses at other users).
 */
export class LoginLimiter {
  constructor(
    private readonly attempts: LoginAttempts,
    private readonly max = LOGIN_MAX_FAILURES,
    private readonly windowMs = LOGIN_WINDOW_MS,
  ) {}

  /**
   * Counts an attempt for `usernameKey` from `address`.
   * @throws LoginRateLimitedError when either is past the limit (Retry-After = when its window ends).
   */
  async begin(usernameKey: string, address: string): Promise<LoginAttempt> {
    const user = hashSecret(usernameKey);
    const [u, a] = await Promise.all([this.count('user', user), this.count('address', address)]);
    const over = [u, a].filter((c) => c.n > this.max);
    if (over.length) throw new LoginRateLimitedError(Math.max(1000, ...over.map((c) => c.ttlMs)));
    return {
      succeeded: async () => {
        await this.attempts.reset('user', user);
        await this.attempts.uncount('address', address);
      },
    };
  }

  /** One count, the window set on the first (atomic, one counter: Cluster-safe). */
  private async count(kind: LoginCounter, id: string): Promise<{ n: number; ttlMs: number }> {
    const { n, ttlMs } = await this.attempts.count(kind, id, this.windowMs);
    return { n, ttlMs: ttlMs > 0 ? ttlMs : this.windowMs };
  }
}
