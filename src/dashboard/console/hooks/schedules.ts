import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { createSchedule, deleteSchedule, listSchedules, previewSchedule, runSchedule, updateSchedule, type ScheduleBody } from '../api/schedules';
import { useLive } from './live';

export function useSchedules() {
  const { pollMs } = useLive();
  return useQuery({ queryKey: ['schedules'], queryFn: listSchedules, refetchInterval: Math.max(pollMs, 15000) });
}

/** Next runs of a cron expression (server-side, the scheduler's own rules); off while the expression is empty. */
export function useSchedulePreview(cron: string, timezone: string) {
  return useQuery({ queryKey: ['schedule-preview', cron, timezone], queryFn: () => previewSchedule(cron, timezone, 5), enabled: cron.trim() !== '', retry: false, staleTime: 30_000 });
}

export function useScheduleActions() {
  const qc = useQueryClient();
  const done = () => qc.invalidateQueries({ queryKey: ['schedules'] });
  return {
    create: useMutation({ mutationFn: (b: ScheduleBody) => createSchedule(b), onSuccess: done }),
    update: useMutation({ mutationFn: (v: { id: string; body: ScheduleBody }) => updateSchedule(v.id, v.body), onSuccess: done }),
    remove: useMutation({ mutationFn: (id: string) => deleteSchedule(id), onSuccess: done }),
    /** A manual run: the new job lands in the job lists, the schedule itself does not change. */
    run: useMutation({ mutationFn: (id: string) => runSchedule(id), onSuccess: () => qc.invalidateQueries({ queryKey: ['jobs'] }) }),
  };
}
