import { useQuery, useQueryClient } from '@tanstack/react-query';
import { useEffect, useRef } from 'react';
import { ApiError } from '../api/client';
import { getFlow, jobDependencies } from '../api/flows';

/** How often a running flow and an unfinished job's dependencies are read again, ms. */
export const FLOW_POLL_MS = 5000;

/** A 4xx is an answer (a flow record gone, a role without access): asking again changes nothing. */
const retryUnless4xx = (n: number, e: Error) => !(e instanceof ApiError && e.status >= 400 && e.status < 500) && n < 1;

/**
 * A flow (`GET /flows/:id`), read again every {@link FLOW_POLL_MS} while it runs and whenever
 * `jobStatus` (the status of the job page's own job) changes. Nothing is asked when `flowId` is null.
 */
export function useFlow(flowId: string | null, jobStatus?: string) {
  const qc = useQueryClient();
  const seen = useRef(jobStatus);
  useEffect(() => {
    if (seen.current === jobStatus) return;
    seen.current = jobStatus;
    if (flowId) void qc.invalidateQueries({ queryKey: ['flow', flowId] });
  }, [qc, flowId, jobStatus]);
  return useQuery({
    queryKey: ['flow', flowId],
    queryFn: () => getFlow(flowId as string),
    enabled: flowId !== null,
    retry: retryUnless4xx,
    refetchInterval: (q) => (q.state.data?.status === 'running' ? FLOW_POLL_MS : false),
  });
}

/**
 * A flow job's dependencies with their results, under the job's query key (so whatever refreshes
 * the job refreshes them); read again every {@link FLOW_POLL_MS} while the job is unfinished.
 */
export function useJobDependencies(id: string, enabled: boolean, unfinished: boolean) {
  return useQuery({ queryKey: ['job', id, 'dependencies'], queryFn: () => jobDependencies(id), enabled, retry: retryUnless4xx, refetchInterval: unfinished ? FLOW_POLL_MS : false });
}
