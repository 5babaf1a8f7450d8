import { fireEvent, screen, within } from '@testing-library/react';
import { describe, expect, it } from 'vitest';
import { calls, envelope, route } from '../../test/fake-server';
import { aJob, renderAt, signedInAs } from '../../test/render';

const queue = (paused = false) => ({
  name: 'emails',
  paused,
  maxConcurrency: 5,
  rateLimit: null,
  defaults: { maxAttempts: 3, backoff: { type: 'exponential', delayMs: 2000, maxDelayMs: 3600000, jitter: 'equal' }, timeoutMs: 600000 },
  external: false,
  counts: { waiting: 2, delayed: 0, active: 1, completed: 5, failed: 0, cancelled: 0 },
});

describe('queue view', () => {
  it('pause asks for confirmation, then pauses and says so', async () => {
    signedInAs('operator');
    let paused = false;
    route('GET /queues/emails', () => queue(paused));
    route('POST /queues/emails/pause', () => ((paused = true), queue(true)));
    route('GET /jobs', { items: [], nextCursor: null });
    renderAt('/queues/emails');
    fireEvent.click(await screen.findByRole('button', { name: 'Pause queue' }));
    expect(calls.some((c) => c.method === 'POST')).toBe(false);
    fireEvent.click(within(screen.getByRole('alertdialog')).getByRole('button', { name: 'Pause queue' }));
    await screen.findByText('paused', { selector: '[role=status]' });
    expect(calls.filter((c) => c.method === 'POST').map((c) => c.url.pathname)).toEqual(['/queues/emails/pause']);
  });

  it('settings: a local check blocks a bad value; the server\'s 400 details land on their fields', async () => {
    signedInAs('admin');
    route('GET /queues/emails', queue());
    route('GET /jobs', { items: [], nextCursor: null });
    route('PUT /queues/emails', envelope(400, 'validation_failed', 'invalid body', [{ path: 'rateLimit.durationMs', message: 'must be at most 86400000' }]));
    renderAt('/queues/emails');
    const max = await screen.findByLabelText('Max concurrency');
    fireEvent.change(max, { target: { value: '0' } });
    fireEvent.click(screen.getByRole('button', { name: 'Save settings' }));
    expect(max.getAttribute('aria-invalid')).toBe('true');
    expect(calls.some((c) => c.method === 'PUT')).toBe(false);
    fireEvent.change(max, { target: { value: '4' } });
    fireEvent.change(screen.getByLabelText('Rate limit: starts'), { target: { value: '10' } });
    fireEvent.change(screen.getByLabelText('Rate limit: per (ms)'), { target: { value: '99999999999' } });
    fireEvent.click(screen.getByRole('button', { name: 'Save settings' }));
    await screen.findByText('must be at most 86400000');
    expect(screen.getByLabelText('Rate limit: per (ms)').getAttribute('aria-invalid')).toBe('true');
    expect(calls.find((c) => c.method === 'PUT')?.body).toMatchObject({ maxConcurrency: 4, rateLimit: { max: 10, durationMs: 99999999999 } });
  });

  it('a viewer sees the settings read-only and no pause, cancel or retry', async () => {
    signedInAs('viewer');
    route('GET /queues/emails', queue());
    route('GET /jobs', { items: [aJob({ status: 'waiting', lastError: null })], nextCursor: null });
    renderAt('/queues/emails');
    await screen.findByText(aJob().id.slice(-12));
    await screen.findByText('viewer@example.com');
    expect(screen.queryByRole('button', { name: /pause|resume|cancel|retry|save/i })).toBeNull();
    expect(screen.getByLabelText('Max concurrency')).toHaveProperty('disabled', true);
  });
});
