import { useQueryClient } from '@tanstack/react-query';
import { createContext, useContext, useEffect, useState, type ReactNode } from 'react';
import { EVENTS_URL } from '../api/dashboard';

/**
 * How fresh the console's data is:
 * - `live`: the server's event stream is open; lists refresh when it says something changed;
 * - `polling`: no stream (not offered, or lost): every view polls;
 * - `offline`: the last request failed to reach the server.
 */
export type LiveMode = 'live' | 'polling' | 'offline';

export interface LiveState {
  mode: LiveMode;
  /** Epoch ms of the last answer from the server (any query), null before the first. */
  lastOkAt: number | null;
  /** How often views poll, ms: slower while the stream is open (a safety net), fast without it. */
  pollMs: number;
}

const LiveContext = createContext<LiveState>({ mode: 'polling', lastOkAt: null, pollMs: 5000 });
export const useLive = () => useContext(LiveContext);

/** Query keys each stream event makes stale (the stats come in the `counts` event itself). */
const COUNT_KEYS = [['queues'], ['queue'], ['workers'], ['dlq']];

/**
 * Opens `GET /dashboard/events` (Server-Sent Events: `counts`, `job`, `resync`) and turns
 * its events into cache updates and query invalidations; without it (no EventSource, the endpoint
 * missing, the connection lost) views poll every 5 s. Also tracks the last
 * successful answer of any query for the staleness indicator.
 */
export function LiveProvider({ children, enabled = true }: { children: ReactNode; enabled?: boolean }) {
  const qc = useQueryClient();
  const [stream, setStream] = useState(false);
  const [lastOkAt, setLastOkAt] = useState<number | null>(null);
  const [failing, setFailing] = useState(false);

  useEffect(() => {
    return qc.getQueryCache().subscribe((e) => {
      if (e.type !== 'updated') return;
      const s = e.query.state;
      if (e.action.type === 'success') {
        setLastOkAt(s.dataUpdatedAt);
        setFailing(false);
      } else if (e.action.type === 'error') {
        const err = s.error as { status?: number } | null;
        // Only a failure to reach the server makes the console offline (a 404 is an answer).
        if (err && err.status === 0) setFailing(true);
      }
    });
  }, [qc]);

  useEffect(() => {
    if (!enabled || typeof EventSource === 'undefined') return;
    let es: EventSource | null = null;
    let retry: ReturnType<typeof setTimeout> | undefined;
    let timer: ReturnType<typeof setTimeout> | undefined;
    let pendingJobs = new Set<string>();
    const flush = () => {
      timer = undefined;
      for (const k of COUNT_KEYS) void qc.invalidateQueries({ queryKey: k });
      for (const id of pendingJobs) void qc.invalidateQueries({ queryKey: ['job', id] });
      pendingJobs = new Set();
    };
    // Events come in bursts: one refresh per 500 ms at most.
    const soon = () => {
      if (!timer) timer = setTimeout(flush, 500);
    };
    const open = () => {
      es = new EventSource(EVENTS_URL, { withCredentials: true });
      es.onopen = () => setStream(true);
      // `counts` is the GET /dashboard/stats body itself: the tiles update at once, the lists refetch.
      es.addEventListener('counts', (m: MessageEvent) => {
        try {
          qc.setQueryData(['stats'], JSON.parse(String(m.data)));
        } catch {
          // Unreadable: the refetch below brings it.
        }
        soon();
      });
      // More changes than the server would send one by one: refetch everything shown.
      es.addEventListener('resync', () => void qc.invalidateQueries());
      es.addEventListener('job', (m: MessageEvent) => {
        try {
          const id = (JSON.parse(String(m.data)) as { id?: string }).id;
          if (id) pendingJobs.add(id);
        } catch {
          // A job event we cannot read still means something changed.
        }
        soon();
      });
      es.onerror = () => {
        setStream(false);
        es?.close();
        retry = setTimeout(open, 15000);
      };
    };
    open();
    return () => {
      es?.close();
      clearTimeout(retry);
      clearTimeout(timer);
    };
  }, [qc, enabled]);

  const mode: LiveMode = failing ? 'offline' : stream ? 'live' : 'polling';
  return <LiveContext.Provider value={{ mode, lastOkAt, pollMs: stream ? 30000 : 5000 }}>{children}</LiveContext.Provider>;
}
