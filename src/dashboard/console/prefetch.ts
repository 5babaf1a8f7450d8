import type { QueryClient } from '@tanstack/react-query';
import { latencyQuery, statsQuery, workersQuery } from './hooks/dashboard';
import { jobsPageQuery } from './hooks/jobs';
import { queuesQuery } from './hooks/queues';
import { sessionQuery } from './hooks/session';
import { filterOf } from './views/jobs/JobsView';

/**
 * Starts the reads of the view the console is opened on before React's first
 * render (TanStack Query's prefetching, "render as you fetch"): the hooks would
 * ask only once the first render commits, ~150–300 ms after the bundle ran on
 * this project's 2-core machine (docs/benchmarks.md, "Console: first useful
 * paint"). Each read uses the same query options as the view's hook, so the
 * view finds it in flight or answered and asks nothing twice.
 *
 * Covers the session (every view but the login) and the two landing views,
 * the overview (`/ui/`) and the explorer (`/ui/jobs?…`, its first page for the
 * URL's filter); other views read on mount as before. Failures are left to
 * the hooks (a 401 sends the operator to the login as before).
 * @param path `location.pathname` (with the router's basename `/ui`).
 * @param search `location.search`.
 */
export function prefetchFirstView(qc: QueryClient, path: string, search: string): void {
  const view = path.replace(/^\/ui(?=\/|$)/, '').replace(/\/+$/, '') || '/';
  if (view === '/login') return;
  void qc.prefetchQuery(sessionQuery);
  if (view === '/') {
    void qc.prefetchQuery(queuesQuery);
    void qc.prefetchQuery(statsQuery);
    void qc.prefetchQuery(workersQuery);
    void qc.prefetchQuery(latencyQuery);
  } else if (view === '/jobs') {
    void qc.prefetchQuery(jobsPageQuery(filterOf(new URLSearchParams(search))));
  }
}
