import type { Queue, Stats, Worker } from '../../api/types';

/** One thing an operator should look at, with where to go. */
export interface Attention {
  key: string;
  text: string;
  to: string;
}

/** A queue counts as stalled when jobs wait this long with nothing running (ms). */
export const STALL_MS = 60_000;

/**
 * What needs attention, from what the API says now:
 * - the DLQ is growing (jobs failed in the last minute);
 * - a queue is stalled: not paused, jobs waiting, none active, and the oldest has
 *   waited over {@link STALL_MS} (when /metrics gives the age), or no worker alive at all;
 * - a worker is dead (stopped heartbeating).
 * @param latency oldest waiting job's age per queue, ms; null when unknown.
 */
export function needsAttention(stats: Stats | undefined, queues: Queue[] | undefined, workers: Worker[] | undefined, latency: Record<string, number> | null | undefined): Attention[] {
  const out: Attention[] = [];
  if (stats && stats.throughput.failedPerMin > 0) {
    out.push({ key: 'dlq', text: `Dead-letter queue growing: ${stats.throughput.failedPerMin} failed in the last minute (${stats.totals.failed} in all)`, to: '/dlq' });
  }
  const alive = workers ? workers.filter((w) => w.status !== 'dead').length : null;
  for (const q of queues ?? []) {
    if (q.paused || q.external || q.counts.waiting === 0 || q.counts.active > 0) continue;
    const age = latency?.[q.name];
    if ((age !== undefined && age > STALL_MS) || alive === 0) {
      out.push({ key: `stall-${q.name}`, text: `Queue ${q.name} stalled: ${q.counts.waiting} waiting, nothing running${age !== undefined ? `, oldest waiting ${Math.round(age / 1000)} s` : ', no worker alive'}`, to: `/queues/${encodeURIComponent(q.name)}` });
    }
  }
  for (const w of workers ?? []) {
    if (w.status === 'dead') out.push({ key: `dead-${w.id}`, text: `Worker ${w.hostname}:${w.pid} is dead (last heartbeat ${w.lastHeartbeatAt})`, to: '/workers' });
  }
  return out;
}
