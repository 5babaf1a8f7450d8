import { useQuery } from '@tanstack/react-query';
import { getStats, listWorkers, metricsSeries, queueLatencies } from '../api/dashboard';
import { useLive } from './live';

export function useStats() {
  const { pollMs } = useLive();
  return useQuery({ queryKey: ['stats'], queryFn: getStats, refetchInterval: pollMs });
}

export function useWorkers() {
  const { pollMs } = useLive();
  return useQuery({ queryKey: ['workers'], queryFn: listWorkers, refetchInterval: pollMs });
}

/** Oldest waiting job's age per queue (ms), from /metrics; null when /metrics is not open to the console. */
export function useQueueLatencies() {
  const { pollMs } = useLive();
  return useQuery({ queryKey: ['latency'], queryFn: queueLatencies, refetchInterval: Math.max(pollMs, 10000) });
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
