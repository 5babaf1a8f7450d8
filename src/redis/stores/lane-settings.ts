import type { KeyLimits, KeyStats, QueueConfigChange, RateLimit } from '../../core/ports/queues';
import type { RedisContext } from '../context';

/** Meta fields of flow control per key (lua/includes/lanes.lua). */
const LANE_FIELDS = ['km', 'kc', 'krm', 'krd', 'fm', 'kk', 'ag', 'kt'] as const;

/** Entries per rebuildLanes call: ~1,000 jobs keep each call to a few ms of Redis time. */
const REBUILD_CHUNK = 1000;

/**
 * What a configure call changes of a queue's flow control: meta fields to set
 * and to delete, and whether the lanes must be rebuilt (`jobs`: lanes mode
 * turned on or aging changed) or only the ring re-checked (`ring`: limits or
 * fairness changed).
 */
export function laneChange(cfg: QueueConfigChange, current: Record<string, string | null>): {
  set: Record<string, string | number>;
  del: string[];
  rebuild: 'jobs' | 'ring' | null;
} {
  const set: Record<string, string | number> = {};
  const del: string[] = [];
  let turnsOn = false;
  if (cfg.keyConcurrency === null) del.push('kc');
  else if (cfg.keyConcurrency !== undefined) {
    set.kc = cfg.keyConcurrency;
    turnsOn = true;
  }
  if (cfg.keyRateLimit === null) del.push('krm', 'krd');
  else if (cfg.keyRateLimit) {
    Object.assign(set, { krm: cfg.keyRateLimit.max, krd: cfg.keyRateLimit.durationMs });
    turnsOn = true;
  }
  if (cfg.fairness === null) del.push('fm');
  else if (cfg.fairness) {
    set.fm = cfg.fairness === 'fifo' ? 'f' : 'r';
    turnsOn = true;
  }
  let agingChanged = false;
  if (cfg.agingMs === null) {
    del.push('ag');
    agingChanged = current.ag !== null;
  } else if (cfg.agingMs !== undefined) {
    set.ag = cfg.agingMs;
    agingChanged = current.ag !== String(cfg.agingMs);
    turnsOn = true;
  }
  const touched = cfg.keyConcurrency !== undefined || cfg.keyRateLimit !== undefined || cfg.fairness !== undefined || cfg.agingMs !== undefined;
  const lanesOn = current.km === '1';
  if (!lanesOn) {
    // Plain or turns mode (lua/includes/lanes.lua) holds while nothing needs
    // lanes: a limit, aging or fifo moves the queue's waiting jobs into lanes.
    // (Round robin alone needs none: the first keyed job starts turns mode.)
    const after = (f: string): boolean => (del.includes(f) ? false : f in set ? true : current[f] !== null && current[f] !== undefined);
    const needsLanes = after('kc') || after('krm') || after('ag') || (del.includes('fm') ? false : (set.fm ?? current.fm) === 'f');
    return { set, del, rebuild: turnsOn && needsLanes ? 'jobs' : null };
  }
  const rebuild = agingChanged ? 'jobs' : touched ? 'ring' : null;
  return { set, del, rebuild };
}

/** Reads the meta fields {@link laneChange} needs. */
export async function laneMeta(ctx: RedisContext, queue: string): Promise<Record<string, string | null>> {
  const v = await ctx.redis.hmget(ctx.keys(queue).meta, ...LANE_FIELDS);
  return Object.fromEntries(LANE_FIELDS.map((f, i) => [f, v[i]]));
}

/**
 * Runs lua/rebuildLanes-3.lua to the end: the `jobs` phase (every waiting job
 * into its lane) when asked, then the `ring` phase. Each call handles
 * {@link REBUILD_CHUNK} entries, so Redis is never held for long; an
 * interrupted rebuild leaves the queue on its previous path and the next
 * configure call finishes it.
 */
export async function rebuildLanes(ctx: RedisContext, queue: string, from: 'slots' | 'jobs' | 'ring'): Promise<void> {
  const k = ctx.keys(queue);
  const phases = from === 'slots' ? (['slots'] as const) : from === 'jobs' ? (['jobs', 'ring'] as const) : (['ring'] as const);
  for (const phase of phases) {
    let cursor = '0';
    do {
      cursor = String(await ctx.scripts.run<string>('rebuildLanes', [k.waiting, k.meta, k.wake], [k.base, phase, cursor === 'more' ? '0' : cursor, REBUILD_CHUNK]));
    } while (cursor !== '0');
  }
}

/** `concurrency|rateMax|rateDurationMs` as lua/includes/lanes.lua reads it. */
export function encodeOverride(o: KeyLimits): string {
  return `${o.concurrency ?? ''}|${o.rateLimit?.max ?? ''}|${o.rateLimit?.durationMs ?? ''}`;
}

/** The inverse of {@link encodeOverride}; a malformed value reads as no limit. */
export function decodeOverride(v: string): KeyLimits {
  const [c, rm, rd] = v.split('|');
  const num = (s: string | undefined): number | null => (s && /^\d{1,15}$/.test(s) ? Number(s) : null);
  const max = num(rm);
  const durationMs = num(rd);
  const rateLimit: RateLimit | null = max && durationMs ? { max, durationMs } : null;
  return { concurrency: num(c), rateLimit };
}

/**
 * Sets (merges) or removes one key's override through lua/overrideKey-2.lua,
 * which merges in the same step (two concurrent changes of different fields
 * both land). `change`: absent fields stay, null clears one; null removes
 * the override. @returns what was stored before and after (null: none).
 */
export async function writeOverride(ctx: RedisContext, queue: string, key: string, change: Partial<KeyLimits> | null): Promise<{ before: KeyLimits | null; after: KeyLimits | null }> {
  const k = ctx.keys(queue);
  let arg = '';
  if (change) {
    const c = change.concurrency === undefined ? '~' : (change.concurrency ?? '');
    const r = change.rateLimit === undefined ? '~|~' : change.rateLimit ? `${change.rateLimit.max}|${change.rateLimit.durationMs}` : '|';
    arg = `${c}|${r}`;
  }
  const [prev, now] = await ctx.scripts.run<[string | null, string | null]>('overrideKey', [k.keyOverrides, k.wake], [k.base, key, arg]);
  const before = prev ? decodeOverride(prev) : null;
  const after = now ? decodeOverride(now) : null;
  // Turns mode has no lanes to limit: an override moves the queue to lanes.
  if (after && (await ctx.redis.hget(k.meta, 'kmig')) === '1') await rebuildLanes(ctx, queue, 'jobs');
  return { before, after };
}

/**
 * One key's counts: waiting = its lane's size, active = its entry in the
 * counts index (minus waiting + active, lua/includes/lanes.lua) less waiting;
 * in turns mode active is counted from the active set instead.
 */
export async function keyCounts(ctx: RedisContext, queue: string, key: string): Promise<{ waiting: number; active: number }> {
  const k = ctx.keys(queue);
  const [[, total], [, waiting], [, mode]] = ((await ctx.redis.multi().zscore(`${k.base}kcnt`, key).zcard(`${k.base}lane:${key}`).hget(k.meta, 'km').exec()) ?? []) as [unknown, unknown][];
  const all = -(Number(total) || 0);
  if (mode === 't' && all > 0) {
    // Turns mode has no lanes: the key's active jobs are counted from the
    // active set (its first 10,000, as lua/topKeys-1.lua does).
    const ids = await ctx.redis.zrange(k.active, 0, 9999);
    const p = ctx.redis.pipeline();
    for (const id of ids) p.hget(`${k.base}job:${id}`, 'ck');
    const active = ((await p.exec()) ?? []).filter(([, ck]) => ck === key).length;
    return { waiting: Math.max(0, all - active), active: Math.min(all, active) };
  }
  const w = Number(waiting) || 0;
  return { waiting: w, active: Math.max(0, all - w) };
}

/** The busiest keys of a queue (lua/topKeys-1.lua). */
export async function topKeys(ctx: RedisContext, queue: string, limit: number): Promise<KeyStats[]> {
  const k = ctx.keys(queue);
  const flat = await ctx.scripts.run<(string | number)[]>('topKeys', [k.keyOverrides], [k.base, limit]);
  const out: KeyStats[] = [];
  for (let i = 0; i + 3 < flat.length; i += 4) {
    const ov = String(flat[i + 3]);
    out.push({ key: String(flat[i]), waiting: Number(flat[i + 1]), active: Number(flat[i + 2]), overrides: ov ? decodeOverride(ov) : null });
  }
  return out;
}
