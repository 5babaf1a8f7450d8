import { WorkerRegistryStore, type RegisteredWorker, type WorkerEntry } from '../../core/ports/workers';
import type { RedisClient } from '../connection';
import { workerKey, workersKey } from '../keys';

/**
 * {@link WorkerRegistryStore} in Redis: a hash per worker
 * (`<prefix>:worker:<id>`, with an expiry) and the sorted set
 * `<prefix>:workers` of ids by last heartbeat (ms).
 */
export class RedisWorkerRegistryStore implements WorkerRegistryStore {
  constructor(
    private readonly redis: RedisClient,
    private readonly prefix: string,
  ) {}

  async beat(e: WorkerEntry & { ttlMs: number }, keepMs: number): Promise<void> {
    const key = workerKey(this.prefix, e.id);
    await Promise.all([
      this.redis
        .multi()
        .hset(key, {
          id: e.id,
          hostname: e.hostname,
          pid: e.pid,
          queues: e.queues.join(','),
          concurrency: e.concurrency,
          active: e.active,
          startedAt: e.startedAt,
          lastHeartbeatAt: e.lastHeartbeatAt,
          status: e.status,
          ttl: e.ttlMs,
        })
        .pexpire(key, keepMs)
        .exec(),
      this.redis.zadd(workersKey(this.prefix), e.lastHeartbeatAt, e.id),
    ]);
  }

  async remove(id: string): Promise<void> {
    await Promise.all([this.redis.del(workerKey(this.prefix, id)), this.redis.zrem(workersKey(this.prefix), id)]);
  }

  async list(): Promise<RegisteredWorker[]> {
    const ids = await this.redis.zrange(workersKey(this.prefix), 0, -1, 'WITHSCORES');
    const out: RegisteredWorker[] = [];
    for (let i = 0; i < ids.length; i += 2) {
      const h = await this.redis.hgetall(workerKey(this.prefix, ids[i]));
      out.push({
        id: ids[i],
        lastBeatAt: Number(ids[i + 1]),
        entry: h.id
          ? {
              id: h.id,
              hostname: h.hostname,
              pid: Number(h.pid),
              queues: h.queues ? h.queues.split(',') : [],
              concurrency: Number(h.concurrency),
              active: Number(h.active),
              startedAt: Number(h.startedAt),
              lastHeartbeatAt: Number(h.lastHeartbeatAt),
              status: h.status as 'running' | 'draining',
              ttlMs: h.ttl === undefined ? null : Number(h.ttl),
            }
          : null,
      });
    }
    return out;
  }

  async sweep(cutoffMs: number): Promise<number> {
    const old = await this.redis.zrangebyscore(workersKey(this.prefix), '-inf', cutoffMs);
    // One DEL per key: the hashes of different workers may sit on different cluster shards.
    await Promise.all(old.map((id) => this.redis.del(workerKey(this.prefix, id))));
    return this.redis.zremrangebyscore(workersKey(this.prefix), '-inf', cutoffMs);
  }
}
