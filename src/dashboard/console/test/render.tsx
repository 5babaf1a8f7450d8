import { render } from '@testing-library/react';
import { MemoryRouter } from 'react-router';
import { AppRoutes, makeQueryClient, Providers } from '../app';
import { prefetchFirstView } from '../prefetch';
import type { Job, Role } from '../api/types';
import { route } from './fake-server';

/**
 * Renders the whole app at `path` (relative to /ui) with the fake server, no live stream.
 * `prefetch`: the first view's reads start before the render, as main.tsx does.
 */
export function renderAt(path: string, { prefetch = false } = {}) {
  const client = makeQueryClient();
  client.setDefaultOptions({ queries: { retry: false, refetchOnWindowFocus: false } });
  if (prefetch) {
    const u = new URL(path, 'http://console.test/');
    prefetchFirstView(client, `/ui${u.pathname}`, u.search);
  }
  return render(
    <Providers client={client} live={false}>
      <MemoryRouter initialEntries={[path]}>
        <AppRoutes />
      </MemoryRouter>
    </Providers>,
  );
}

/** `GET /auth/session` answering as a user with `role` (or the anonymous admin of AUTH=off). */
export function signedInAs(role: Role | 'anonymous') {
  route(
    'GET /auth/session',
    role === 'anonymous'
      ? { kind: 'anonymous', user: null, keyId: null, project: 'default', role: 'admin', expiresAt: null, org: 'default', hidePayloads: false, projects: [{ name: 'default', org: 'default', role: 'admin' }], orgs: [] }
      : {
          kind: 'user', user: { id: 'u1', username: `${role}@example.com` }, keyId: null, project: 'default', role, expiresAt: null, org: 'default', hidePayloads: false,
          projects: [{ name: 'default', org: 'default', role }],
          orgs: [{ name: 'default', orgRole: 'member' }],
        },
  );

}

export function aJob(over: Partial<Job> = {}): Job {
  return {
    executionSeq: 1,
    cancelRequested: false,
    fingerprint: null,
    id: '0190f5a0-0000-7000-8000-000000000001',
    queue: 'emails',
    type: 'send',
    payload: { to: 'a@example.com' },
    status: 'failed',
    priority: 0,
    attempts: 3,
    maxAttempts: 3,
    backoff: { type: 'exponential', delayMs: 2000, maxDelayMs: 3600000, jitter: 'equal' },
    timeoutMs: 600000,
    idempotencyKey: null,
    concurrencyKey: null,
    flowId: null,
    flowRef: null,
    progress: null,
    result: null,
    lastError: 'boom',
    workerId: 'w1',
    createdAt: '2026-12-01T10:00:00.000Z',
    runAt: '2026-12-01T10:00:00.000Z',
    startedAt: '2026-12-01T10:00:01.000Z',
    finishedAt: '2026-12-01T10:00:02.000Z',
    updatedAt: '2026-12-01T10:00:02.000Z',
    ...over,
  };
}
