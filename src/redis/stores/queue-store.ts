import { decodeBackoff, encodeBackoff } from '../../core/backoff';
import type { KeyLimits, KeyStats, LiveCounts, QueueConfigChange, QueueSettings } from '../../core/ports/queues'; // SHIM-h-api (KeyLimits, KeyStats)
import { QueueStore } from '../../core/ports/queues';
import type { RedisContext } from '../context';
import { newQueueChannel, queuesKey } from '../keys';
import { oldestWaitingSince } from '../waiting-age';

/**
 * The Redis implementation of {@link QueueStore}: the global set of queue
 * names (its own slot, never touched by scripts) and each queue's `meta` hash.
 */
export class RedisQueueStore implements QueueStore {
  private readonly known = new Map<string, Promise<void>>();
  /** Queues whose registration has completed (a synchronous check for the enqueue hot path). */
  private readonly registered = new Set<string>();

  constructor(private readonly ctx: RedisContext) {}

  /** True once {@link register} completed for `queue` in this process (no I/O). */
  isRegistered(queue: string): boolean {
    return this.registered.has(queue);
  }

  register(queue: string): Promise<void> {
    let p = this.known.get(queue);
    if (!p) {
      const { redis, prefix } = this.ctx;
      // A brand-new queue is announced so mirror writers take it over at once, not at their next poll.
      p = redis.sadd(queuesKey(prefix), queue).then(async (added) => {
        if (added === 1) await redis.publish(newQueueChannel(prefix), queue);
        this.registered.add(queue);
      });
      p.catch(() => this.known.delete(queue)); // retried by the next call
      this.known.set(queue, p);
    }
    return p;
  }

  async list(): Promise<string[]> {
    return (await this.ctx.redis.smembers(queuesKey(this.ctx.prefix))).sort();
  }

  async configure(queue: string, cfg: QueueConfigChange): Promise<void> {
    await this.register(queue);
    const k = this.ctx.keys(queue);
    const set: Record<string, string | number> = {};
    const del: string[] = [];
    if (cfg.paused !== undefined) set.paused = cfg.paused ? 1 : 0;
    if (cfg.external !== undefined) set.ext = cfg.external ? 1 : 0;
    if (cfg.maxConcurrency === null) del.push('mc');
    else if (cfg.maxConcurrency !== undefined) set.mc = cfg.maxConcurrency;
    if (cfg.rateLimit === null) del.push('rlMax', 'rlDur');
    else if (cfg.rateLimit) Object.assign(set, { rlMax: cfg.rateLimit.max, rlDur: cfg.rateLimit.durationMs });
    if (cfg.defaults?.maxAttempts !== undefined) set.dMa = cfg.defaults.maxAttempts;
    if (cfg.defaults?.backoff) set.dBo = encodeBackoff(cfg.defaults.backoff);
    if (cfg.defaults?.timeoutMs !== undefined) set.dTo = cfg.defaults.timeoutMs;
    // SHIM-h-api begin
    for (const [f, v] of [['shimKc', cfg.keyConcurrency], ['shimKrl', cfg.keyRateLimit === undefined ? undefined : cfg.keyRateLimit && JSON.stringify(cfg.keyRateLimit)], ['shimFair', cfg.fairness], ['shimAge', cfg.agingMs]] as const) {
      if (v === null) del.push(f);
      else if (v !== undefined) set[f] = v;
    }
    // SHIM-h-api end
    const multi = this.ctx.redis.multi();
    if (Object.keys(set).length) multi.hset(k.meta, set);
    if (del.length) multi.hdel(k.meta, ...del);
    // Resuming (or lifting a limit) must wake the workers blocked on this queue.
    multi.rpush(k.wake, 1);
    await multi.exec();
  }

  async settings(queue: string): Promise<QueueSettings | null> {
    const k = this.ctx.keys(queue);
    const [known, m] = await Promise.all([
      this.ctx.redis.sismember(queuesKey(this.ctx.prefix), queue),
      this.ctx.redis.hmget(k.meta, 'paused', 'mc', 'rlMax', 'rlDur', 'ext', 'dMa', 'dBo', 'dTo', 'shimKc', 'shimKrl', 'shimFair', 'shimAge'), // SHIM-h-api (shim*)
    ]);
    if (!known) return null;
    const [paused, mc, rlMax, rlDur, ext, dMa, dBo, dTo, shimKc, shimKrl, shimFair, shimAge] = m; // SHIM-h-api (shim*)
    const defaults: QueueSettings['defaults'] = {};
    if (dMa) defaults.maxAttempts = Number(dMa);
    if (dBo) {
      try {
        defaults.backoff = decodeBackoff(dBo);
      } catch {
        // a hand-edited meta hash: show no default rather than fail the read
      }
    }
    if (dTo) defaults.timeoutMs = Number(dTo);
    return {
      name: queue,
      paused: paused === '1',
      maxConcurrency: mc ? Number(mc) : null,
      rateLimit: rlMax && rlDur ? { max: Number(rlMax), durationMs: Number(rlDur) } : null,
      external: ext === '1',
      defaults,
      // SHIM-h-api begin
      keyConcurrency: shimKc ? Number(shimKc) : null,
      keyRateLimit: shimKrl ? (JSON.parse(shimKrl) as QueueSettings['keyRateLimit']) : null,
      fairness: shimFair === 'round_robin' || shimFair === 'fifo' ? shimFair : 'fifo',
      agingMs: shimAge ? Number(shimAge) : null,
      // SHIM-h-api end
    };
  }

  async liveCounts(queue: string): Promise<LiveCounts> {
    const k = this.ctx.keys(queue);
    const r = this.ctx.redis;
    const [w, d, a, f] = await Promise.all([r.zcard(k.waiting), r.zcard(k.delayed), r.zcard(k.active), r.zcard(k.failed)]);
    return { waiting: w, delayed: d, active: a, failed: f };
  }

  oldestWaitingSince(queue: string): Promise<number | null> {
    return oldestWaitingSince(this.ctx.redis, this.ctx.keys(queue));
  }

  async activeHolders(queue: string, max: number): Promise<{ id: string; workerId: string }[]> {
    const k = this.ctx.keys(queue);
    const ids = await this.ctx.redis.zrange(k.active, 0, max - 1);
    if (!ids.length) return [];
    const p = this.ctx.redis.pipeline();
    for (const id of ids) p.hget(`${k.base}job:${id}`, 'w');
    const res = (await p.exec()) ?? [];
    return ids.map((id, i) => {
      const [err, w] = res[i] ?? [null, null];
      return { id, workerId: !err && typeof w === 'string' ? w : '' };
    });
  }

  // SHIM-h-api begin: a stand-in for the lead's implementation, removed before the merge.
  async keys(queue: string, limit: number): Promise<KeyStats[]> {
    const h = await this.ctx.redis.hgetall(this.ctx.keys(queue).base + 'shimKo');
    return Object.keys(h).sort().slice(0, limit).map((key) => ({ key, waiting: 0, active: 0, overrides: JSON.parse(h[key]) as KeyLimits }));
  }

  async setKeyOverride(queue: string, key: string, change: Partial<KeyLimits>): Promise<KeyLimits> {
    const hk = this.ctx.keys(queue).base + 'shimKo';
    const cur = await this.ctx.redis.hget(hk, key);
    const next: KeyLimits = { concurrency: null, rateLimit: null, ...(cur ? (JSON.parse(cur) as KeyLimits) : {}) };
    if (change.concurrency !== undefined) next.concurrency = change.concurrency;
    if (change.rateLimit !== undefined) next.rateLimit = change.rateLimit;
    await this.ctx.redis.hset(hk, key, JSON.stringify(next));
    return next;
  }

  async deleteKeyOverride(queue: string, key: string): Promise<boolean> {
    return (await this.ctx.redis.hdel(this.ctx.keys(queue).base + 'shimKo', key)) === 1;
  }
  // SHIM-h-api end
}
