import { queryOptions, useQuery } from '@tanstack/react-query';
import { getStats, listWorkers, metricsSeries, queueLatencies } from '../api/dashboard';
import { useLive } from './live';

/**
 * How long a read stays fresh, ms: a view mounted right after the first
 * view's prefetch (prefetch.ts) answered uses it instead of asking again.
 * The views poll on their own interval regardless.
 */
export const FRESH_MS = 1000;

export const statsQuery = queryOptions({ queryKey: ['stats'], queryFn: getStats, staleTime: FRESH_MS });
export const workersQuery = queryOptions({ queryKey: ['workers'], queryFn: listWorkers, staleTime: FRESH_MS });
/** Oldest waiting job's age per queue (ms), from /metrics; null when /metrics is not open to the console. */
export const latencyQuery = queryOptions({ queryKey: ['latency'], queryFn: queueLatencies, staleTime: FRESH_MS });

export function useStats() {
  const { pollMs } = useLive();
  return useQuery({ ...statsQuery, refetchInterval: pollMs });
}

export function useWorkers() {
  const { pollMs } = useLive();
  return useQuery({ ...workersQuery, refetchInterval: pollMs });
}

/** Oldest waiting job's age per queue (ms), from /metrics; null when /metrics is not open to the console. */
export function useQueueLatencies() {
  const { pollMs } = useLive();
  return useQuery({ ...latencyQuery, refetchInterval: Math.max(pollMs, 10000) });
}

/** The chart ranges of the overview: span and step, ms. */
export const RANGES = {
  '1h': { spanMs: 3_600_000, stepMs: 60_000 },
  '24h': { spanMs: 86_400_000, stepMs: 900_000 },
  '7d': { spanMs: 604_800_000, stepMs: 7_200_000 },
} as const;
export type RangeName = keyof typeof RANGES;

/** Completed/failed per step over the range, ending now (steps aligned so refetches do not shift the bars). */
export function useThroughput(range: RangeName, queue?: string) {
  const { spanMs, stepMs } = RANGES[range];
  return useQuery({
    queryKey: ['metrics', range, queue ?? ''],
    queryFn: () => {
      const to = Math.ceil(Date.now() / stepMs) * stepMs;
      return metricsSeries({ queue, from: new Date(to - spanMs).toISOString(), to: new Date(to).toISOString(), stepMs });
    },
    refetchInterval: Math.max(stepMs, 30_000),
    retry: false,
  });
}
