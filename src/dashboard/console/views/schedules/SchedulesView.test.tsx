import { fireEvent, screen, within } from '@testing-library/react';
import { describe, expect, it } from 'vitest';
import type { Schedule } from '../../api/types';
import { calls, envelope, route } from '../../test/fake-server';
import { aJob, renderAt, signedInAs } from '../../test/render';

const SID = '0190f5a0-0000-7000-8000-000000000051';
const JOB = '0190f5a0-0000-7000-8000-0000000000bb';
const schedule: Schedule = {
  id: SID,
  name: 'nightly',
  cron: '0 3 * * *',
  timezone: 'UTC',
  queue: 'mail',
  type: 'send',
  payload: {},
  priority: 0,
  maxAttempts: null,
  backoff: null,
  timeoutMs: null,
  concurrencyKey: null,
  enabled: false,
  nextRunAt: null,
  lastRunAt: null,
  lastSlotAt: null,
  lastJobId: null,
  createdAt: '2026-12-01T10:00:00.000Z',
  updatedAt: '2026-12-01T10:00:00.000Z',
};

describe('schedules view: run now', () => {
  it('an operator runs a (disabled) schedule now and gets a link to the new job', async () => {
    signedInAs('operator');
    route('GET /schedules', [schedule]);
    route(`POST /schedules/${SID}/run`, { status: 201, body: aJob({ id: JOB, status: 'waiting', queue: 'mail' }) });
    renderAt('/schedules');
    const table = await screen.findByRole('region', { name: 'Schedules' });
    const row = (await within(table).findByText('nightly')).closest('tr')!;
    fireEvent.click(within(row).getByRole('button', { name: 'Run now' }));
    const link = await within(row).findByRole('link', { name: JOB.slice(-12) });
    expect(link.getAttribute('href')).toBe(`/jobs/${JOB}`);
    expect(calls.filter((c) => c.method === 'POST').map((c) => c.url.pathname)).toEqual([`/schedules/${SID}/run`]);
  });

  it('shows the error envelope when the run is refused', async () => {
    signedInAs('operator');
    route('GET /schedules', [schedule]);
    route(`POST /schedules/${SID}/run`, envelope(404, 'not_found', `schedule ${SID} not found`));
    renderAt('/schedules');
    const row = (await screen.findByText('nightly')).closest('tr')!;
    fireEvent.click(within(row).getByRole('button', { name: 'Run now' }));
    expect(await within(row).findByText(/404 not_found/)).toBeTruthy();
    expect(within(row).queryByRole('link')).toBeNull();
  });

  it('a viewer sees no run now button', async () => {
    signedInAs('viewer');
    route('GET /schedules', [schedule]);
    renderAt('/schedules');
    const row = (await screen.findByText('nightly')).closest('tr')!;
    expect(within(row).queryByRole('button', { name: 'Run now' })).toBeNull();
    expect(screen.queryByRole('button', { name: 'Run now' })).toBeNull();
  });
});
