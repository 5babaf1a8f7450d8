import { QueryClient, QueryClientProvider } from '@tanstack/react-query';
import { Route, Routes } from 'react-router';
import { Shell } from './components/Shell';
import { LiveProvider } from './hooks/live';
import { DlqView } from './views/dlq/DlqView';
import { JobView } from './views/job/JobView';
import { JobsView } from './views/jobs/JobsView';
import { LoginView } from './views/login/LoginView';
import { OverviewView } from './views/overview/OverviewView';
import { QueueView } from './views/queue/QueueView';
import { SchedulesView } from './views/schedules/SchedulesView';
import { WorkersView } from './views/workers/WorkersView';
import { InviteView } from './views/invite/InviteView';
import { MembersView } from './views/members/MembersView';

/** A query client: one retry, no refetch storm on focus (views poll or follow the live feed). */
export function makeQueryClient(): QueryClient {
  return new QueryClient({ defaultOptions: { queries: { retry: 1, refetchOnWindowFocus: false }, mutations: { retry: false } } });
}

/** Every view is a URL (API.md "Dashboard (web)"), relative to the router's basename `/ui`. */
export function AppRoutes() {
  return (
    <Routes>
      <Route path="/login" element={<LoginView />} />
      <Route path="/invite" element={<InviteView />} />
      <Route element={<Shell />}>
        <Route index element={<OverviewView />} />
        <Route path="queues/:name" element={<QueueView />} />
        <Route path="jobs" element={<JobsView />} />
        <Route path="jobs/:id" element={<JobView />} />
        <Route path="dlq" element={<DlqView />} />
        <Route path="workers" element={<WorkersView />} />
        <Route path="schedules" element={<SchedulesView />} />
        <Route path="orgs/:org/members" element={<MembersView />} />
        <Route path="*" element={<p role="alert">No such view.</p>} />
      </Route>
    </Routes>
  );
}

export function Providers({ client, live = true, children }: { client: QueryClient; live?: boolean; children: React.ReactNode }) {
  return (
    <QueryClientProvider client={client}>
      <LiveProvider enabled={live}>{children}</LiveProvider>
    </QueryClientProvider>
  );
}
