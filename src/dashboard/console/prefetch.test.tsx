import { render, screen, waitFor } from '@testing-library/react';
import { MemoryRouter } from 'react-router';
import { describe, expect, it } from 'vitest';
import { AppRoutes, makeQueryClient, Providers } from './app';
import { prefetchFirstView } from './prefetch';
import { calls, envelope, route } from './test/fake-server';
import { aJob, renderAt, signedInAs } from './test/render';

const id = (n: number) => `0190f5a0-0000-7000-8000-${String(n).padStart(12, '0')}`;
/** Requests made so far, as "METHOD /path". */
const asked = () => calls.map((c) => `${c.method} ${c.url.pathname}`);
const count = (key: string) => asked().filter((k) => k === key).length;

describe('the first view’s reads start before the first render (prefetch.ts)', () => {
  it('asks the view’s reads with nothing rendered', async () => {
    signedInAs('viewer');
    route('GET /jobs', { items: [], nextCursor: null });
    prefetchFirstView(makeQueryClient(), '/ui/jobs', '?type=send');
    await waitFor(() => expect(asked().sort()).toEqual(['GET /auth/session', 'GET /jobs']));
    expect(calls.find((c) => c.url.pathname === '/jobs')!.url.searchParams.get('type')).toBe(
      'send',
    );
  });

  it('explorer: the page of the URL’s filter is asked once (the view finds the prefetch’s) and shown', async () => {
    signedInAs('viewer');
    route('GET /jobs', { items: [aJob({ id: id(7) })], nextCursor: null });
    const view = renderAt('/jobs?queue=emails&status=failed', { prefetch: true });
    await screen.findByText(id(7).slice(-12));
    expect(count('GET /jobs')).toBe(1);
    expect(count('GET /auth/session')).toBe(1);
    const q = calls.find((c) => c.url.pathname === '/jobs')!.url.searchParams;
    expect(Object.fromEntries(q)).toMatchObject({ queue: 'emails', status: 'failed' });
    view.unmount();
  });

  it('overview: queues, stats, workers and the latency read are each asked once', async () => {
    signedInAs('anonymous');
    route('GET /queues', [
      {
        name: 'emails',
        paused: false,
        external: false,
        maxConcurrency: null,
        counts: { waiting: 1, delayed: 0, active: 0, failed: 0, completed: 0 },
      },
    ]);
    route('GET /dashboard/stats', {
      totals: { active: 0 },
      throughput: { completedPerMin: 0, failedPerMin: 0 },
      auditLagMs: 0,
    });
    route('GET /workers', []);
    const view = renderAt('/', { prefetch: true });
    await screen.findByRole('link', { name: 'emails' });
    for (const k of ['GET /queues', 'GET /dashboard/stats', 'GET /workers', 'GET /auth/session'])
      expect([k, count(k)]).toEqual([k, 1]);
    expect(count('GET /metrics')).toBeLessThanOrEqual(1);
    view.unmount();
  });

  it('the login view prefetches nothing', () => {
    const view = renderAt('/login', { prefetch: true });
    expect(asked().filter((k) => k !== 'GET /auth/session')).toEqual([]);
    view.unmount();
  });

  it('signed out: the prefetch’s 401, answered before the first render, sends the operator to the login without asking again', async () => {
    route('GET /auth/session', envelope(401, 'unauthorized', 'no credentials'));
    route('GET /jobs', envelope(401, 'unauthorized', 'no credentials'));
    const client = makeQueryClient();
    prefetchFirstView(client, '/ui/jobs', '');
    // In a browser the first render commits 150–300 ms after the bundle ran: the 401 is in by then.
    await waitFor(() => expect(client.getQueryState(['session'])?.status).toBe('error'));
    const view = render(
      <Providers client={client} live={false}>
        <MemoryRouter initialEntries={['/jobs']}>
          <AppRoutes />
        </MemoryRouter>
      </Providers>,
    );
    await screen.findByLabelText('Username');
    expect(count('GET /auth/session')).toBe(1);
    view.unmount();
  });
});
