import { useQueryClient } from '@tanstack/react-query';
import { useEffect, useState } from 'react';
import { EVENTS_URL } from '../api/dashboard';
import type { Job, JobEvent, LogLine } from '../api/types';

type Items<T> = { items: T[] } | undefined;
const logKey = (l: LogLine) => `${l.at}|${l.attempt}|${l.level}|${l.message}`;

/**
 * While `enabled` (the job can still change), follows `GET /dashboard/events?job=<id>`
 * (Server-Sent Events): `job` replaces the cached job, `event` and `log` append
 * to its timeline and log lines (the stream starts with everything so far, so
 * appends are de-duplicated: events by `seq`, log lines by their content).
 * @returns true while the stream is open (the job's queries then stop polling);
 * false without EventSource, before it opens, or after it failed (polling resumes).
 */
export function useJobStream(id: string, enabled: boolean): boolean {
  const qc = useQueryClient();
  const [open, setOpen] = useState(false);
  useEffect(() => {
    if (!enabled || typeof EventSource === 'undefined') return;
    const es = new EventSource(`${EVENTS_URL}?job=${encodeURIComponent(id)}`, { withCredentials: true });
    const read = <T>(m: MessageEvent): T | null => {
      try {
        return JSON.parse(String(m.data)) as T;
      } catch {
        return null;
      }
    };
    es.onopen = () => setOpen(true);
    es.onerror = () => {
      // EventSource reconnects by itself (retry: 3000); meanwhile the page polls.
      setOpen(false);
    };
    es.addEventListener('job', (m) => {
      const j = read<Job>(m as MessageEvent);
      if (j && j.id === id) qc.setQueryData(['job', id], j);
    });
    es.addEventListener('event', (m) => {
      const e = read<JobEvent>(m as MessageEvent);
      if (!e) return;
      qc.setQueryData<Items<JobEvent>>(['job', id, 'events'], (old) => {
        const items = old?.items ?? [];
        return items.some((x) => x.seq === e.seq) ? old : { items: [...items, e].sort((a, b) => a.seq - b.seq) };
      });
      // A new event may end a run: the executions table is refetched, not streamed.
      void qc.invalidateQueries({ queryKey: ['job', id, 'executions'] });
    });
    es.addEventListener('log', (m) => {
      const l = read<LogLine>(m as MessageEvent);
      if (!l) return;
      qc.setQueryData<Items<LogLine>>(['job', id, 'logs'], (old) => {
        const items = old?.items ?? [];
        const k = logKey(l);
        return items.some((x) => logKey(x) === k) ? old : { items: [...items, l] };
      });
    });
    return () => {
      es.close();
      setOpen(false);
    };
  }, [qc, id, enabled]);
  return open;
}
