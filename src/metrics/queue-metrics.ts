import { Gauge, Registry } from 'prom-client';
import { splitQualified } from '../core/project-queue';
import { withTimeout } from './sluice-metrics';

/** Where the queue gauges read from (src/metrics/metrics.module.ts wires the process's store). */
export interface QueueSources {
  /** Every registered queue name. */
  listQueues(): Promise<string[]>;
  /** Live counts of one queue (RedisJobStore.liveCounts). */
  liveCounts(queue: string): Promise<{ waiting: number; delayed: number; active: number; failed: number }>;
  /** When the longest-waiting job entered `waiting`, epoch ms on the Redis clock; null when none waits (src/redis/waiting-age.ts). */
  oldestWaitingSince(queue: string): Promise<number | null>;
  /** The Redis clock now, epoch ms (one TIME per scrape). */
  redisNowMs(): Promise<number>;
  /** The busiest concurrency keys of a queue, at most `limit`, busiest first (QueueStore.keys). */
  topKeys(queue: string, limit: number): Promise<{ key: string; waiting: number; active: number }[]>;
}

/** Longest a scrape waits for the queue reads, ms; on timeout the queue series are left out. */
export const DEPTH_SCRAPE_TIMEOUT_MS = 1000;

const QUEUE_STATES = ['waiting', 'delayed', 'active', 'failed'] as const;

/** Keys per queue in `sluice_queue_key_jobs`: the series' cardinality is at most 2 × this per queue. */
export const TOP_KEYS_PER_QUEUE = 10;
/**
 * A queue whose last read found keys is read again only once this old, ms.
 * Its read (lua/topKeys-1.lua) looks at up to 10,000 keys and holds Redis
 * while it does: ~60–100 ms at 10,000 keys on the 2-core bench machine
 * (docs/autoscaling.md). A queue with no keys costs a few reads of empty keys
 * and is read on every scrape.
 */
export const TOP_KEYS_MAX_AGE_MS = 30_000;

export interface QueueMetricsOptions {
  /** Serve `sluice_queue_key_jobs` (the api role; workers leave it out so a fleet's scrapes do not repeat the read). Default true. */
  keySeries?: boolean;
  /** Clock for the key reads' age, ms (tests). */
  now?: () => number;
}

interface QueueRow {
  queue: string;
  counts: Awaited<ReturnType<QueueSources['liveCounts']>>;
  /** Seconds; 0 when nothing waits. */
  oldestAge: number;
}

/**
 * The queue series of the api and worker roles, read from Redis when scraped
 * (one read per scrape shared by the three series, bounded by
 * {@link DEPTH_SCRAPE_TIMEOUT_MS}):
 * - `sluice_queue_jobs{project,queue,state}` gauge: jobs per queue in state waiting |
 *   delayed | active | failed (ZCARDs);
 * - `sluice_queue_oldest_waiting_age_seconds{project,queue}` gauge: how long the
 *   longest-waiting job has been `waiting` (0 when none; planned delays not
 *   counted; the cost and the one inexact case: src/redis/waiting-age.ts);
 * - `sluice_queue_depth_scrape_success` gauge: 1 when those were read on this
 *   scrape, 0 when the read failed or timed out (then the two above are absent);
 * - `sluice_queue_key_jobs{project,queue,key,state}` gauge (when
 *   `opts.keySeries`): jobs of the {@link TOP_KEYS_PER_QUEUE} busiest
 *   concurrency keys of each queue (waiting + active), in state waiting |
 *   active; a key that drops out of the top loses its series. Read after the
 *   queue list, in its own {@link DEPTH_SCRAPE_TIMEOUT_MS} (absent when that
 *   fails), at most once per {@link TOP_KEYS_MAX_AGE_MS} for a queue that has keys.
 */
export function registerQueueMetrics(registry: Registry, sources: QueueSources, opts: QueueMetricsOptions = {}): void {
  const now = opts.now ?? Date.now;
  const registers = [registry];
  let inFlight: Promise<QueueRow[] | null> | null = null;
  // prom-client collects every metric of a scrape at once: the first collect
  // starts the read, the others of the same scrape share it.
  const read = (): Promise<QueueRow[] | null> => {
    inFlight ??= withTimeout(readAll(sources), DEPTH_SCRAPE_TIMEOUT_MS)
      .catch(() => null)
      .finally(() => setImmediate(() => (inFlight = null)));
    return inFlight;
  };
  new Gauge({
    name: 'sluice_queue_depth_scrape_success',
    help: '1 when the queue series were read on this scrape',
    registers,
    async collect() {
      this.set((await read()) ? 1 : 0);
    },
  });
  new Gauge({
    name: 'sluice_queue_jobs',
    help: 'Jobs per queue and state',
    labelNames: ['project', 'queue', 'state'],
    registers,
    async collect() {
      const rows = await read();
      this.reset();
      for (const { queue, counts } of rows ?? []) {
        const labels = splitQualified(queue);
        for (const state of QUEUE_STATES) this.set({ ...labels, state }, counts[state]);
      }
    },
  });
  const keyCache = new Map<string, { at: number; keys: Awaited<ReturnType<QueueSources['topKeys']>> }>();
  const readKeys = async (queues: string[]) => {
    for (const q of keyCache.keys()) if (!queues.includes(q)) keyCache.delete(q);
    return Promise.all(
      queues.map(async (queue) => {
        const hit = keyCache.get(queue);
        if (hit && hit.keys.length && now() - hit.at < TOP_KEYS_MAX_AGE_MS) return { queue, keys: hit.keys };
        // Invariant: never more than TOP_KEYS_PER_QUEUE keys per queue, whatever the source returns.
        const keys = (await sources.topKeys(queue, TOP_KEYS_PER_QUEUE)).slice(0, TOP_KEYS_PER_QUEUE);
        keyCache.set(queue, { at: now(), keys });
        return { queue, keys };
      }),
    );
  };
  if (opts.keySeries ?? true) new Gauge({
    name: 'sluice_queue_key_jobs',
    help: `Jobs of the ${TOP_KEYS_PER_QUEUE} busiest concurrency keys of each queue, by state (waiting, active)`,
    labelNames: ['project', 'queue', 'key', 'state'],
    registers,
    async collect() {
      const rows = await read();
      const perQueue = rows ? await withTimeout(readKeys(rows.map((r) => r.queue)), DEPTH_SCRAPE_TIMEOUT_MS).catch(() => null) : null;
      this.reset();
      for (const { queue, keys } of perQueue ?? []) {
        const labels = splitQualified(queue);
        for (const k of keys) {
          this.set({ ...labels, key: k.key, state: 'waiting' }, k.waiting);
          this.set({ ...labels, key: k.key, state: 'active' }, k.active);
        }
      }
    },
  });
  new Gauge({
    name: 'sluice_queue_oldest_waiting_age_seconds',
    help: 'How long the longest-waiting job of the queue has been waiting (0 when none)',
    labelNames: ['project', 'queue'],
    registers,
    async collect() {
      const rows = await read();
      this.reset();
      for (const { queue, oldestAge } of rows ?? []) this.set(splitQualified(queue), oldestAge);
    },
  });
}

async function readAll(sources: QueueSources): Promise<QueueRow[]> {
  const [queues, now] = await Promise.all([sources.listQueues(), sources.redisNowMs()]);
  return Promise.all(
    queues.map(async (queue) => {
      const [counts, since] = await Promise.all([sources.liveCounts(queue), sources.oldestWaitingSince(queue)]);
      return { queue, counts, oldestAge: since === null ? 0 : Math.max(0, now - since) / 1000 };
    }),
  );
}
