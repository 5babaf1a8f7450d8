import { screen, within } from '@testing-library/react';
import { describe, expect, it } from 'vitest';
import type { Worker } from '../../api/types';
import { route } from '../../test/fake-server';
import { renderAt, signedInAs } from '../../test/render';

const JOB = '0190f5a0-0000-7000-8000-0000000000aa';
const base = { queues: ['mail'], concurrency: 4, active: 1, startedAt: '2026-12-01T10:00:00.000Z', lastHeartbeatAt: '2026-12-01T10:00:00.000Z', lastClaimAt: null, jobs: [] };
const workers: Worker[] = [
  { ...base, id: 'w-live', hostname: 'node-a', pid: 11, status: 'running', kind: 'process' },
  { ...base, id: 'w-gone', hostname: 'node-b', pid: 12, status: 'dead', kind: 'process' },
  { ...base, id: 'ext-py-1', hostname: '', pid: 0, status: 'running', kind: 'external', lastClaimAt: '2026-12-01T10:00:05.000Z', jobs: [JOB] },
];

describe('workers view', () => {
  it('shows external workers with the jobs they hold as links, and greys dead ones', async () => {
    signedInAs('viewer');
    route('GET /workers', workers);
    renderAt('/workers');
    const table = await screen.findByRole('region', { name: 'Workers' });
    const ext = (await within(table).findAllByText('ext-py-1'))[0].closest('tr')!;
    expect(ext.textContent).toContain('external');
    expect(within(ext).getByRole('link', { name: JOB.slice(-12) }).getAttribute('href')).toBe(`/jobs/${JOB}`);
    expect(within(table).getByText('node-b:12').closest('tr')!.className).toBe('dead');
    expect(within(table).getByText('node-a:11').closest('tr')!.className).toBe('');
  });
});
