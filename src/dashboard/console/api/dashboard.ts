import { client, fetchMetricsText, unwrap } from './client';
import type { Job, MetricsPoint, Stats, Worker } from './types';

export const getStats = () => unwrap<Stats>(client.GET('/dashboard/stats'));
export const recentJobs = () => unwrap<Job[]>(client.GET('/dashboard/recent'));
export const listWorkers = () => unwrap<Worker[]>(client.GET('/workers'));
/** `GET /dashboard/metrics`: completed/failed per step of `stepMs` between from and to. */
export const metricsSeries = (q: { queue?: string; from: string; to: string; stepMs: number }) =>
  unwrap<{ series: MetricsPoint[] }>(client.GET('/dashboard/metrics', { params: { query: q } }));

/**
 * Age of the oldest waiting job per queue, ms, from `/metrics`
 * (`sluice_queue_oldest_waiting_age_seconds`); null when /metrics is closed to the console.
 */
export async function queueLatencies(): Promise<Record<string, number> | null> {
  const text = await fetchMetricsText();
  return text === null ? null : parseOldestAge(text);
}

/** Reads `sluice_queue_oldest_waiting_age_seconds{queue="q",...} 12.5` lines into `{q: 12500}`. */
export function parseOldestAge(text: string): Record<string, number> {
  const out: Record<string, number> = {};
  for (const line of text.split('\n')) {
    const m = /^sluice_queue_oldest_waiting_age_seconds\{([^}]*)\}\s+([0-9.eE+-]+)/.exec(line);
    const q = m && /(?:^|,)queue="((?:[^"\\]|\\.)*)"/.exec(m[1]);
    if (m && q) out[q[1]] = Math.max(out[q[1]] ?? 0, Number(m[2]) * 1000);
  }
  return out;
}

/** The server's live feed (`GET /dashboard/events`, Server-Sent Events: `counts` and `job`). */
export const EVENTS_URL = '/dashboard/events';
