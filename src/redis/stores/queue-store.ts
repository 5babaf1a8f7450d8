import { decodeBackoff, encodeBackoff } from '../../core/backoff';
import type { KeyLimits, KeyStats, LiveCounts, QueueConfigChange, QueueSettings, QueueSnapshot } from '../../core/ports/queues';
import { QueueStore } from '../../core/ports/queues';
import type { RedisContext } from '../context';
import { newQueueChannel, queuesKey, unsavedSettingsKey } from '../keys';
import { oldestWaitingSince } from '../waiting-age';
import { decodeOverride, keyCounts, laneChange, laneMeta, rebuildLanes, topKeys, writeOverride } from './lane-settings';

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
    // Always asked of Redis (not this process's memory of it): Redis may have lost the registry since.
    const { redis, prefix } = this.ctx;
    if ((await redis.sadd(queuesKey(prefix), queue)) === 1) await redis.publish(newQueueChannel(prefix), queue);
    const k = this.ctx.keys(queue);
    const set: Record<string, string | number> = {};
    const del: string[] = [];
    if (cfg.paused !== undefined) set.paused = cfg.paused ? 1 : 0;
    if (cfg.external !== undefined) set.ext = cfg.external ? 1 : 0;
    if (cfg.summaryIncludesPayload !== undefined) set.sip = cfg.summaryIncludesPayload ? 1 : 0;
    if (cfg.maxConcurrency === null) del.push('mc');
    else if (cfg.maxConcurrency !== undefined) set.mc = cfg.maxConcurrency;
    if (cfg.rateLimit === null) del.push('rlMax', 'rlDur');
    else if (cfg.rateLimit) Object.assign(set, { rlMax: cfg.rateLimit.max, rlDur: cfg.rateLimit.durationMs });
    const d = cfg.defaults ?? {};
    if (d.maxAttempts === null) del.push('dMa');
    else if (d.maxAttempts !== undefined) set.dMa = d.maxAttempts;
    if (d.backoff === null) del.push('dBo');
    else if (d.backoff) set.dBo = encodeBackoff(d.backoff);
    if (d.timeoutMs === null) del.push('dTo');
    else if (d.timeoutMs !== undefined) set.dTo = d.timeoutMs;
    const current = await laneMeta(this.ctx, queue);
    const lanes = laneChange(cfg, current);
    // Slots are counted before a concurrency limit exists, so it holds from its first claim.
    if (typeof cfg.keyConcurrency === 'number' && current.kt !== '1') await rebuildLanes(this.ctx, queue, 'slots');
    Object.assign(set, lanes.set);
    // The move into lanes is marked in the same step as the setting, so a
    // process that dies before it runs leaves it to the maintenance pass
    // (src/maintenance/lanes.ts), never a limit that does not hold.
    if (lanes.rebuild === 'jobs') set.kmig = 1;
    // Configured since Redis last lost its data: Redis holds the truth (QueueStore.snapshot).
    set.cfg = 1;
    del.push(...lanes.del);
    const multi = this.ctx.redis.multi();
    multi.hset(k.meta, set);
    if (del.length) multi.hdel(k.meta, ...del);
    // Resuming (or lifting a limit) must wake the workers blocked on this queue.
    multi.rpush(k.wake, 1);
    await multi.exec();
    // Lanes mode on, aging changed (every waiting job re-scored) or limits
    // changed (blocked lanes re-checked): see lua/rebuildLanes-3.lua.
    if (lanes.rebuild) await rebuildLanes(this.ctx, queue, lanes.rebuild);
  }

  async settings(queue: string): Promise<QueueSettings | null> {
    const k = this.ctx.keys(queue);
    const [known, m] = await Promise.all([
      this.ctx.redis.sismember(queuesKey(this.ctx.prefix), queue),
      this.ctx.redis.hmget(k.meta, 'paused', 'mc', 'rlMax', 'rlDur', 'ext', 'dMa', 'dBo', 'dTo', 'kc', 'krm', 'krd', 'fm', 'kk', 'ag', 'sip'),
    ]);
    if (!known) return null;
    const [paused, mc, rlMax, rlDur, ext, dMa, dBo, dTo, kc, krm, krd, fm, kk, ag, sip] = m;
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
      keyConcurrency: kc ? Number(kc) : null,
      keyRateLimit: krm && krd ? { max: Number(krm), durationMs: Number(krd) } : null,
      fairness: fm === 'f' ? 'fifo' : fm === 'r' || kk === '1' ? 'round_robin' : 'fifo',
      agingMs: ag ? Number(ag) : null,
      summaryIncludesPayload: sip === '1',
    };
  }

  async snapshot(queue: string): Promise<{ snapshot: QueueSnapshot; kept: boolean } | null> {
    const [s, cfg, fm, ov] = await Promise.all([
      this.settings(queue),
      this.ctx.redis.hget(this.ctx.keys(queue).meta, 'cfg'),
      this.ctx.redis.hget(this.ctx.keys(queue).meta, 'fm'),
      this.ctx.redis.hgetall(this.ctx.keys(queue).keyOverrides),
    ]);
    if (!s) return null;
    const snapshot: QueueSnapshot = {
      config: {
        paused: s.paused,
        external: s.external,
        maxConcurrency: s.maxConcurrency,
        rateLimit: s.rateLimit,
        defaults: { maxAttempts: s.defaults.maxAttempts ?? null, backoff: s.defaults.backoff ?? null, timeoutMs: s.defaults.timeoutMs ?? null },
        keyConcurrency: s.keyConcurrency,
        keyRateLimit: s.keyRateLimit,
        fairness: fm === 'f' ? 'fifo' : fm === 'r' ? 'round_robin' : null,
        agingMs: s.agingMs,
        summaryIncludesPayload: s.summaryIncludesPayload,
      },
      overrides: Object.entries(ov)
        .map(([key, v]) => ({ key, limits: decodeOverride(v) }))
        .filter((o) => o.limits.concurrency !== null || o.limits.rateLimit !== null)
        .sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0)),
    };
    return { snapshot, kept: cfg === '1' };
  }

  async markUnsaved(queue: string, unsaved: boolean): Promise<void> {
    const key = unsavedSettingsKey(this.ctx.prefix);
    if (unsaved) await this.ctx.redis.sadd(key, queue);
    else await this.ctx.redis.srem(key, queue);
  }

  unsaved(): Promise<string[]> {
    return this.ctx.redis.smembers(unsavedSettingsKey(this.ctx.prefix));
  }

  async liveCounts(queue: string): Promise<LiveCounts> {
    const k = this.ctx.keys(queue);
    const r = this.ctx.redis;
    const [w, d, a, f] = await Promise.all([r.zcard(k.waiting), r.zcard(k.delayed), r.zcard(k.active), r.zcard(k.failed)]);
    return { waiting: w, delayed: d, active: a, failed: f };
  }

  blockedCount(queue: string): Promise<number> {
    return this.ctx.redis.zcard(this.ctx.keys(queue).blocked);
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

  keys(queue: string, limit: number): Promise<KeyStats[]> {
    return topKeys(this.ctx, queue, limit);
  }

  keyCounts(queue: string, key: string): Promise<{ waiting: number; active: number }> {
    return keyCounts(this.ctx, queue, key);
  }

  async finishLaneMove(queue: string): Promise<boolean> {
    if ((await this.ctx.redis.hget(this.ctx.keys(queue).meta, 'kmig')) !== '1') return false;
    await rebuildLanes(this.ctx, queue, 'jobs');
    return true;
  }

  async setKeyOverride(queue: string, key: string, change: Partial<KeyLimits>): Promise<KeyLimits> {
    const { after } = await writeOverride(this.ctx, queue, key, change);
    return after ?? { concurrency: null, rateLimit: null };
  }

  async deleteKeyOverride(queue: string, key: string): Promise<boolean> {
    const { before } = await writeOverride(this.ctx, queue, key, null);
    return before !== null;
  }
}
