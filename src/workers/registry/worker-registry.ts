import { hostname } from 'node:os';
import type { RedisClient } from '../../redis/connection';
import { workerKey, workersKey } from '../../redis/keys';

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

/** A dead worker's details stay readable this long after its last heartbeat (the sweep usually drops it first), ms. */
const KEEP_DEAD_MS = 2 * 3_600_000;

/**
 * Worker registry in Redis: a hash per worker and a sorted set of ids by last
 * heartbeat (ms). A worker that missed its heartbeats for `ttlMs` (three
 * intervals) is reported `dead`, with the details it last wrote (hostname,
 * pid, queues...), until the sweep drops it.
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
          ttl: this.ttlMs,
        })
        // Outlives the worker, so a dead one is still shown with its details.
        .pexpire(key, this.ttlMs + KEEP_DEAD_MS)
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
    const now = Date.now();
    for (let i = 0; i < ids.length; i += 2) {
      const h = await redis.hgetall(workerKey(prefix, ids[i]));
      // Entries written before `ttl` was recorded expired with their worker: a present one is alive.
      const missed = h.ttl !== undefined && now - Number(h.lastHeartbeatAt) > Number(h.ttl);
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
          status: missed ? 'dead' : (h.status as 'running' | 'draining'),
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
    const cutoff = Date.now() - olderThanMs;
    const old = await redis.zrangebyscore(workersKey(prefix), '-inf', cutoff);
    // One DEL per key: the hashes of different workers may sit on different cluster shards.
    await Promise.all(old.map((id) => redis.del(workerKey(prefix, id))));
    return redis.zremrangebyscore(workersKey(prefix), '-inf', cutoff);
  }
}
