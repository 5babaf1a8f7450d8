import { keepPreviousData, queryOptions, useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { cancelJob, cloneBody, enqueueJob, getJob, jobEvents, jobExecutions, jobLogs, listJobs, retryJob, type JobFilter } from '../api/jobs';
import { isUnfinished, type Job } from '../api/types';
import { useLive } from './live';

const isLive = (j: Job | undefined) => j !== undefined && isUnfinished(j.status);

/**
 * One job; polled every 2 s while it can still change (progress, status) unless
 * `streamed` (its event stream is open, job-stream.ts), else as the live feed says.
 */
export function useJob(id: string, streamed = false) {
  const { pollMs } = useLive();
  return useQuery({ queryKey: ['job', id], queryFn: () => getJob(id), refetchInterval: (q) => (streamed ? 30_000 : isLive(q.state.data) ? 2000 : pollMs), retry: false });
}

/** The job's timeline, executions and logs, polled with the job itself while it runs and no stream feeds them. */
export function useJobHistory(id: string, live: boolean, streamed = false) {
  const every = live && !streamed ? 2000 : false;
  return {
    events: useQuery({ queryKey: ['job', id, 'events'], queryFn: () => jobEvents(id), refetchInterval: every }),
    executions: useQuery({ queryKey: ['job', id, 'executions'], queryFn: () => jobExecutions(id), refetchInterval: every }),
    logs: useQuery({ queryKey: ['job', id, 'logs'], queryFn: () => jobLogs(id), refetchInterval: every }),
  };
}

/**
 * One keyset page of `GET /jobs`. Not refreshed on a timer: rows never move under
 * the operator's pointer; the view offers a refresh. The previous page stays shown while the next loads.
 */
export function useJobsPage(filter: JobFilter, cursor: string | undefined) {
  return useQuery({ ...jobsPageQuery(filter, cursor), placeholderData: keepPreviousData });
}

/** `GET /jobs` of one filter and cursor, as {@link useJobsPage} and the first view's prefetch (prefetch.ts) read it. */
export const jobsPageQuery = (filter: JobFilter, cursor?: string) => queryOptions({ queryKey: ['jobs', filter, cursor ?? ''], queryFn: () => listJobs(filter, cursor), staleTime: Infinity });

/** Cancel, retry (optionally with a new payload) and clone: each refreshes the job and the lists. */
export function useJobActions() {
  const qc = useQueryClient();
  const done = (j?: Job) => {
    if (j?.id) void qc.invalidateQueries({ queryKey: ['job', j.id] });
    void qc.invalidateQueries({ queryKey: ['stats'] });
    void qc.invalidateQueries({ queryKey: ['dlq'] });
  };
  return {
    cancel: useMutation({ mutationFn: (id: string) => cancelJob(id), onSuccess: done }),
    retry: useMutation({ mutationFn: (v: { id: string; payload?: Record<string, unknown> }) => retryJob(v.id, v.payload), onSuccess: done }),
    clone: useMutation({ mutationFn: (v: { job: Job; payload: Record<string, unknown> }) => enqueueJob(cloneBody(v.job, v.payload)), onSuccess: done }),
  };
}
