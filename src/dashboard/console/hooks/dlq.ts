import { keepPreviousData, useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { dlqGroups, dlqJobs, purgeDlq, retryDlq, summarizeGroup } from '../api/dlq';
import { useLive } from './live';

export function useDlqGroups(queue?: string) {
  const { pollMs } = useLive();
  return useQuery({ queryKey: ['dlq', 'groups', queue ?? ''], queryFn: () => dlqGroups(queue), refetchInterval: pollMs, retry: false });
}

/** A page of failed jobs (optionally of one queue/type); fetched only while `enabled` (a group is expanded). */
export function useDlqJobs(q: { queue?: string; type?: string; fingerprint?: string }, cursor: string | undefined, enabled = true) {
  return useQuery({ queryKey: ['dlq', 'jobs', q, cursor ?? ''], queryFn: () => dlqJobs(q, cursor), enabled, placeholderData: keepPreviousData, staleTime: Infinity });
}

export function useDlqActions() {
  const qc = useQueryClient();
  const done = () => Promise.all([qc.invalidateQueries({ queryKey: ['dlq'] }), qc.invalidateQueries({ queryKey: ['stats'] })]);
  return {
    retryGroup: useMutation({ mutationFn: (fingerprint: string) => retryDlq({ fingerprint }), onSuccess: done }),
    purge: useMutation({ mutationFn: (queue?: string) => purgeDlq(queue), onSuccess: done }),
    summarize: useMutation({ mutationFn: (fingerprint: string) => summarizeGroup(fingerprint), onSuccess: done }),
  };
}
