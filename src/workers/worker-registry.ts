import { hostname } from 'node:os';
import type { RedisClient } from '../redis/connection';
import { workerKey, workersKey } from '../redis/keys';

/** What GET /workers reports for one worker process. */
export interface WorkerInfo {
  id: string;
  hostname: string;
  pid: number;
  queues: string[];
  concurrency: number;
  active: number;
  startedAt: number;
  lastHeartbeatAt: number;
  status: 'running' | 'draining' | 'dead';
}

/**
 * Worker registry in Redis: a hash per worker that expires after three
 * heartbeat intervals, and a sorted set of ids by last heartbeat (ms). A
 * worker whose hash expired is reported `dead` until the sweep drops it.
 */
export class WorkerRegistry {
  private status: 'running' | 'draining' = 'running';
  private readonly startedAt = Date.now();

  constructor(
    private readonly redis: RedisClient,
    private readonly prefix: string,
    private readonly info: { id: string; queues: string[]; concurrency: number },
    private readonly ttlMs: number,
  ) {}

  async beat(active: number): Promise<void> {
    const now = Date.now();
    const key = workerKey(this.prefix, this.info.id);
    await Promise.all([
      this.redis
        .multi()
        .hset(key, {
          id: this.info.id,
          hostname: hostname(),
          pid: process.pid,
          queues: this.info.queues.join(','),
          concurrency: this.info.concurrency,
          active,
          startedAt: this.startedAt,
          lastHeartbeatAt: now,
          status: this.status,
        })
        .pexpire(key, this.ttlMs)
        .exec(),
      this.redis.zadd(workersKey(this.prefix), now, this.info.id),
    ]);
  }

  async draining(active: number): Promise<void> {
    this.status = 'draining';
    await this.beat(active);
  }

  async remove(): Promise<void> {
    await Promise.all([this.redis.del(workerKey(this.prefix, this.info.id)), this.redis.zrem(workersKey(this.prefix), this.info.id)]);
  }

  /** Every registered worker, dead ones included (hash expired). */
  static async list(redis: RedisClient, prefix: string): Promise<WorkerInfo[]> {
    const ids = await redis.zrange(workersKey(prefix), 0, -1, 'WITHSCORES');
    const out: WorkerInfo[] = [];
    for (let i = 0; i < ids.length; i += 2) {
      const h = await redis.hgetall(workerKey(prefix, ids[i]));
      if (h.id) {
        out.push({
          id: h.id,
          hostname: h.hostname,
          pid: Number(h.pid),
          queues: h.queues ? h.queues.split(',') : [],
          concurrency: Number(h.concurrency),
          active: Number(h.active),
          startedAt: Number(h.startedAt),
          lastHeartbeatAt: Number(h.lastHeartbeatAt),
          status: h.status as 'running' | 'draining',
        });
      } else {
        const last = Number(ids[i + 1]);
        out.push({ id: ids[i], hostname: '', pid: 0, queues: [], concurrency: 0, active: 0, startedAt: last, lastHeartbeatAt: last, status: 'dead' });
      }
    }
    return out;
  }

  /** Drops dead workers last seen more than `olderThanMs` ago. Returns how many. */
  static async sweep(redis: RedisClient, prefix: string, olderThanMs: number): Promise<number> {
    return redis.zremrangebyscore(workersKey(prefix), '-inf', Date.now() - olderThanMs);
  }
}
