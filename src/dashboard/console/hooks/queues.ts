import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { configureQueue, getQueue, listQueues, pauseQueue, resumeQueue, type QueueSettings } from '../api/queues';
import { useLive } from './live';

export function useQueues() {
  const { pollMs } = useLive();
  return useQuery({ queryKey: ['queues'], queryFn: listQueues, refetchInterval: pollMs });
}

export function useQueue(name: string) {
  const { pollMs } = useLive();
  return useQuery({ queryKey: ['queue', name], queryFn: () => getQueue(name), refetchInterval: pollMs });
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
