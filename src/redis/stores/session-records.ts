import { SessionRecords } from '../../core/ports/sessions';
import type { RedisClient } from '../connection';
import { sessionKey, userSessionsKey } from '../keys';

/**
 * {@link SessionRecords} in Redis: `<prefix>:auth:session:<hash>` strings
 * (PX expiry) and `<prefix>:auth:user-sessions:<userId>` sets.
 */
export class RedisSessionRecords implements SessionRecords {
  constructor(
    private readonly redis: RedisClient,
    private readonly prefix: string,
  ) {}

  get(hash: string): Promise<string | null> {
    return this.redis.get(sessionKey(this.prefix, hash));
  }

  async put(hash: string, record: string, ttlMs: number): Promise<void> {
    await this.redis.set(sessionKey(this.prefix, hash), record, 'PX', ttlMs);
  }

  async refresh(hash: string, record: string, ttlMs: number): Promise<void> {
    await this.redis.set(sessionKey(this.prefix, hash), record, 'PX', ttlMs, 'XX');
  }

  delete(hash: string): Promise<number> {
    return this.redis.del(sessionKey(this.prefix, hash));
  }

  async addToUser(userId: string, hash: string, ttlMs: number): Promise<void> {
    const key = userSessionsKey(this.prefix, userId);
    await this.redis.sadd(key, hash);
    await this.redis.pexpire(key, ttlMs);
  }

  userHashes(userId: string): Promise<string[]> {
    return this.redis.smembers(userSessionsKey(this.prefix, userId));
  }

  async removeFromUser(userId: string, hashes: string[]): Promise<void> {
    await this.redis.srem(userSessionsKey(this.prefix, userId), ...hashes);
  }
}
