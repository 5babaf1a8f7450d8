import { ApiKeyStore } from '../../core/ports/api-keys';
import type { RedisClient } from '../connection';
import { apiKeyKeys } from '../keys';

/**
 * {@link ApiKeyStore} in Redis: hashes `<prefix>:auth:keys` (SHA-256 → record),
 * `<prefix>:auth:keyids` (id → SHA-256) and `<prefix>:auth:lastused` (id → ms).
 */
export class RedisApiKeyStore implements ApiKeyStore {
  private readonly k: ReturnType<typeof apiKeyKeys>;

  constructor(
    private readonly redis: RedisClient,
    prefix: string,
  ) {
    this.k = apiKeyKeys(prefix);
  }

  findByHash(hash: string): Promise<string | null> {
    return this.redis.hget(this.k.byHash, hash);
  }

  async hasHash(hash: string): Promise<boolean> {
    return (await this.redis.hexists(this.k.byHash, hash)) === 1;
  }

  hashOf(id: string): Promise<string | null> {
    return this.redis.hget(this.k.ids, id);
  }

  allRecords(): Promise<string[]> {
    return this.redis.hvals(this.k.byHash);
  }

  async add(hash: string, id: string, record: string): Promise<void> {
    await this.redis.multi().hset(this.k.byHash, hash, record).hset(this.k.ids, id, hash).exec();
  }

  async remove(hash: string, id: string): Promise<void> {
    await this.redis.multi().hdel(this.k.byHash, hash).hdel(this.k.ids, id).hdel(this.k.lastUsed, id).exec();
  }

  async removeRevoked(hash: string, id: string): Promise<boolean> {
    const removed = Number(await this.redis.hdel(this.k.byHash, hash));
    await this.redis.hdel(this.k.ids, id);
    return removed > 0;
  }

  async restore(hash: string, id: string, record: string): Promise<boolean> {
    if (!(await this.redis.hsetnx(this.k.byHash, hash, record))) return false;
    await this.redis.hset(this.k.ids, id, hash);
    return true;
  }

  async lastUsed(): Promise<Record<string, number>> {
    const raw = await this.redis.hgetall(this.k.lastUsed);
    const out: Record<string, number> = {};
    for (const [id, ms] of Object.entries(raw)) out[id] = Number(ms);
    return out;
  }

  async recordLastUsed(times: Iterable<[id: string, ms: number]>): Promise<void> {
    const args: string[] = [];
    for (const [id, ms] of times) args.push(id, String(ms));
    await this.redis.hset(this.k.lastUsed, ...args);
  }
}
