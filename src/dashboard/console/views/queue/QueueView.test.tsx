import { fireEvent, screen, waitFor, within } from '@testing-library/react';
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
  keyConcurrency: null,
  keyRateLimit: { max: 100, durationMs: 60000 },
  fairness: 'round_robin',
  agingMs: null,
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
    // Per-key fields left as loaded are not sent (GET answers the effective fairness: sending it would pin it).
    for (const f of ['keyConcurrency', 'keyRateLimit', 'fairness', 'agingMs']) expect(calls.find((c) => c.method === 'PUT')?.body).not.toHaveProperty(f);
  });

  it('settings per concurrency key: shown as loaded, checked against the bounds, only what changed is sent; the keys refresh', async () => {
    signedInAs('operator');
    let q = queue();
    route('GET /queues/emails', () => q);
    route('GET /jobs', { items: [], nextCursor: null });
    route('GET /queues/emails/keys', { items: [] });
    route('PUT /queues/emails', ({ body }: { body: Record<string, unknown> }) => (q = { ...q, ...body, fairness: (body.fairness as string | null) ?? 'round_robin' } as typeof q));
    renderAt('/queues/emails');
    const conc = await screen.findByLabelText('Per-key concurrency');
    expect((conc as HTMLInputElement).value).toBe('');
    expect((screen.getByLabelText('Per-key rate limit: starts') as HTMLInputElement).value).toBe('100');
    expect((screen.getByLabelText('Per-key rate limit: per (ms)') as HTMLInputElement).value).toBe('60000');
    expect((screen.getByLabelText('Fairness') as HTMLSelectElement).value).toBe('round_robin');
    const aging = screen.getByLabelText('Aging: +1 priority per (ms)');
    fireEvent.change(conc, { target: { value: '100001' } });
    fireEvent.change(screen.getByLabelText('Per-key rate limit: starts'), { target: { value: '10001' } });
    fireEvent.change(aging, { target: { value: '999' } });
    fireEvent.click(screen.getByRole('button', { name: 'Save settings' }));
    expect(screen.getByText('must be an integer 1..100000')).toBeTruthy();
    expect(screen.getByText('must be an integer 1..10000')).toBeTruthy();
    expect(screen.getByText('must be an integer 1000..86400000')).toBeTruthy();
    expect([conc, aging].map((e) => e.getAttribute('aria-invalid'))).toEqual(['true', 'true']);
    expect(calls.some((c) => c.method === 'PUT')).toBe(false);
    fireEvent.change(conc, { target: { value: '3' } });
    fireEvent.change(screen.getByLabelText('Per-key rate limit: starts'), { target: { value: '' } });
    fireEvent.change(screen.getByLabelText('Per-key rate limit: per (ms)'), { target: { value: '' } });
    fireEvent.change(screen.getByLabelText('Fairness'), { target: { value: 'default' } });
    fireEvent.change(aging, { target: { value: '60000' } });
    const keyCalls = () => calls.filter((c) => c.url.pathname === '/queues/emails/keys').length;
    const before = keyCalls();
    fireEvent.click(screen.getByRole('button', { name: 'Save settings' }));
    await screen.findByText('Saved.');
    expect(calls.find((c) => c.method === 'PUT')?.body).toMatchObject({ keyConcurrency: 3, keyRateLimit: null, fairness: null, agingMs: 60000 });
    // The keys' effective limits follow the queue's: the list is asked again.
    await waitFor(() => expect(keyCalls()).toBeGreaterThan(before));
    // Saved: the form now holds what the server answered, and an unchanged save sends no per-key field.
    fireEvent.click(screen.getByRole('button', { name: 'Save settings' }));
    await waitFor(() => expect(calls.filter((c) => c.method === 'PUT')).toHaveLength(2));
    for (const f of ['keyConcurrency', 'keyRateLimit', 'fairness', 'agingMs']) expect(calls.filter((c) => c.method === 'PUT')[1].body).not.toHaveProperty(f);
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

  it('a blocked tab (v1.2 workflows) lists the queue\'s blocked jobs; the counts are the six the server sends, blocked has none', async () => {
    signedInAs('operator');
    route('GET /queues/emails', queue());
    route('GET /jobs', ({ url }: { url: URL }) => ({ items: url.searchParams.get('status') === 'blocked' ? [aJob({ status: 'blocked', lastError: null, finishedAt: null })] : [], nextCursor: null }));
    renderAt('/queues/emails');
    const tab = await screen.findByRole('tab', { name: 'blocked' });
    expect(screen.getAllByRole('tab').map((t) => t.textContent)).toEqual(['waiting 2', 'delayed 0', 'active 1', 'completed 5', 'failed 0', 'cancelled 0', 'blocked ']);
    expect([...document.querySelectorAll('.facts dt')].map((dt) => dt.textContent)).toEqual(['waiting', 'delayed', 'active', 'completed', 'failed', 'cancelled']);
    fireEvent.click(tab);
    await screen.findByText(aJob().id.slice(-12));
    expect(calls.filter((c) => c.url.pathname === '/jobs').map((c) => Object.fromEntries(c.url.searchParams)).at(-1)).toMatchObject({ queue: 'emails', status: 'blocked' });
    // A blocked job has not finished: an operator may cancel it, not retry it.
    const row = screen.getByText(aJob().id.slice(-12)).closest('tr')!;
    expect(within(row).getByRole('button', { name: 'Cancel' })).toBeTruthy();
    expect(within(row).queryByRole('button', { name: 'Retry' })).toBeNull();
    expect(row.querySelector('.badge.s-blocked')?.textContent).toBe('blocked');
  });
});
