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
}

/** Longest a scrape waits for the queue reads, ms; on timeout the queue series are left out. */
export const DEPTH_SCRAPE_TIMEOUT_MS = 1000;

const QUEUE_STATES = ['waiting', 'delayed', 'active', 'failed'] as const;

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
 *   scrape, 0 when the read failed or timed out (then the two above are absent).
 */
export function registerQueueMetrics(registry: Registry, sources: QueueSources): void {
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
