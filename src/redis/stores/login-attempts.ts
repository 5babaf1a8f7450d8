import { LoginAttempts, type LoginCounter } from '../../core/ports/login-limits';
import type { RedisClient } from '../connection';
import { loginFailKey } from '../keys';

/** {@link LoginAttempts} in Redis: one counter key per (kind, id), `<prefix>:auth:login-fail:{u|a}:<id>`. */
export class RedisLoginAttempts implements LoginAttempts {
  constructor(
    private readonly redis: RedisClient,
    private readonly prefix: string,
  ) {}

  /** INCR with the window set on the first count (one key per MULTI: Cluster-safe). */
  async count(kind: LoginCounter, id: string, windowMs: number): Promise<{ n: number; ttlMs: number }> {
    const key = loginFailKey(this.prefix, kind, id);
    const r = await this.redis.multi().set(key, '0', 'PX', windowMs, 'NX').incr(key).pttl(key).exec();
    if (!r) throw new Error('login limit: transaction aborted');
    for (const [err] of r) if (err) throw err;
    return { n: Number(r[1][1]), ttlMs: Number(r[2][1]) };
  }

  async reset(kind: LoginCounter, id: string): Promise<void> {
    await this.redis.del(loginFailKey(this.prefix, kind, id));
  }

  async uncount(kind: LoginCounter, id: string): Promise<void> {
    const key = loginFailKey(this.prefix, kind, id);
    const r = await this.redis.multi().decr(key).pttl(key).exec();
    // The window ended in between: DECR made a key without expiry; drop it.
    if (r && Number(r[1][1]) < 0) await this.redis.del(key);
  }
}
