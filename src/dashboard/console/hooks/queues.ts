import { keepPreviousData, queryOptions, useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { configureQueue, getQueue, listQueueKeys, listQueues, pauseQueue, removeKeyOverride, resumeQueue, setKeyOverride, type KeyOverride, type QueueSettings } from '../api/queues';
import { FRESH_MS } from './dashboard';
import { useLive } from './live';

export const queuesQuery = queryOptions({ queryKey: ['queues'], queryFn: listQueues, staleTime: FRESH_MS });

export function useQueues() {
  const { pollMs } = useLive();
  return useQuery({ ...queuesQuery, refetchInterval: pollMs });
}

export function useQueue(name: string) {
  const { pollMs } = useLive();
  return useQuery({ queryKey: ['queue', name], queryFn: () => getQueue(name), refetchInterval: pollMs });
}

/**
 * The busiest keys of a queue, refreshed with the queue view: polled like the
 * queue, and under its query key (`['queue', name, …]`), so whatever refreshes
 * the queue (the live feed, an action) refreshes its keys too. The previous list
 * stays shown while a longer one loads.
 */
export function useQueueKeys(name: string, limit: number) {
  const { pollMs } = useLive();
  return useQuery({ queryKey: ['queue', name, 'keys', limit], queryFn: () => listQueueKeys(name, limit), refetchInterval: pollMs, placeholderData: keepPreviousData });
}

/** Pause, resume and configure: each refreshes the queue and the counts it shows. */
export function useQueueActions(name: string) {
  const qc = useQueryClient();
  const done = () => Promise.all([qc.invalidateQueries({ queryKey: ['queue', name] }), qc.invalidateQueries({ queryKey: ['queues'] }), qc.invalidateQueries({ queryKey: ['stats'] })]);
  return {
    pause: useMutation({ mutationFn: () => pauseQueue(name), onSuccess: done }),
    resume: useMutation({ mutationFn: () => resumeQueue(name), onSuccess: done }),
    configure: useMutation({ mutationFn: (s: QueueSettings) => configureQueue(name, s), onSuccess: done }),
  };
}

/** Set and remove one key's override (operator); each refreshes the queue's key list. */
export function useKeyOverrideActions(name: string) {
  const qc = useQueryClient();
  const done = () => qc.invalidateQueries({ queryKey: ['queue', name, 'keys'] });
  return {
    set: useMutation({ mutationFn: (v: { key: string; override: KeyOverride }) => setKeyOverride(name, v.key, v.override), onSuccess: done }),
    remove: useMutation({ mutationFn: (key: string) => removeKeyOverride(name, key), onSuccess: done }),
  };
}
