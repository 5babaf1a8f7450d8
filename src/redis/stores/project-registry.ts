import { ProjectRegistry } from '../../core/ports/projects';
import type { RedisClient } from '../connection';
import { projectsKey } from '../keys';

/** {@link ProjectRegistry} in Redis: the hash `<prefix>:projects` (name → creation ms). */
export class RedisProjectRegistry implements ProjectRegistry {
  private readonly key: string;

  constructor(
    private readonly redis: RedisClient,
    prefix: string,
  ) {
    this.key = projectsKey(prefix);
  }

  async exists(name: string): Promise<boolean> {
    return (await this.redis.hexists(this.key, name)) === 1;
  }

  async put(name: string, createdAtMs: number): Promise<void> {
    await this.redis.hset(this.key, name, String(createdAtMs));
  }

  async putIfAbsent(name: string, createdAtMs: number): Promise<boolean> {
    return (await this.redis.hsetnx(this.key, name, String(createdAtMs))) === 1;
  }

  async createdAt(name: string): Promise<number | null> {
    const v = await this.redis.hget(this.key, name);
    return v === null ? null : Number(v);
  }

  async all(): Promise<Record<string, number>> {
    const raw = await this.redis.hgetall(this.key);
    const out: Record<string, number> = {};
    for (const [name, ms] of Object.entries(raw)) out[name] = Number(ms);
    return out;
  }
}
