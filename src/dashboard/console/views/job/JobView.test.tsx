import { fireEvent, screen, waitFor, within } from '@testing-library/react';
import { describe, expect, it } from 'vitest';
import { calls, envelope, route } from '../../test/fake-server';
import { aJob, renderAt, signedInAs } from '../../test/render';

const EVIL = '<script>window.__pwned=1</script><img src=x onerror="window.__pwned=2">';
const ID = '0190f5a0-0000-7000-8000-000000000001';

function jobRoutes(over = {}) {
  route(`GET /jobs/${ID}`, aJob({ payload: { html: EVIL }, lastError: EVIL, result: null, ...over }));
  route(`GET /jobs/${ID}/events`, {
    items: [
      { seq: 1, at: '2026-12-01T10:00:00.000Z', event: 'enqueued', from: null, to: 'waiting', attempt: null, workerId: null, reason: null, error: null, data: null },
      { seq: 2, at: '2026-12-01T10:00:01.000Z', event: 'claimed', from: 'waiting', to: 'active', attempt: 1, workerId: 'w1', reason: null, error: null, data: null },
      { seq: 3, at: '2026-12-01T10:00:02.000Z', event: 'failed', from: 'active', to: 'failed', attempt: 1, workerId: 'w1', reason: 'unrecoverable', error: `Error: ${EVIL}`, data: null },
    ],
  });
  route(`GET /jobs/${ID}/executions`, { items: [{ executionSeq: 1, attempt: 1, workerId: 'w1', startedAt: '2026-12-01T10:00:01.000Z', finishedAt: '2026-12-01T10:00:02.000Z', outcome: 'failed', error: EVIL, durationMs: 1000 }] });
  route(`GET /jobs/${ID}/logs`, { items: [{ at: '2026-12-01T10:00:01.500Z', attempt: 1, level: 'info', message: EVIL }] });
}

describe('job view', () => {
  it('renders stored markup (payload, error, stack, logs, timeline) as inert text', async () => {
    signedInAs('operator');
    jobRoutes();
    const { container } = renderAt(`/jobs/${ID}`);
    await screen.findByText('Timeline');
    await waitFor(() => expect(container.querySelectorAll('.timeline li')).toHaveLength(3));
    await screen.findByLabelText('Log lines');
    expect(container.querySelector('script')).toBeNull();
    expect(container.querySelector('img')).toBeNull();
    expect(container.textContent).toContain('<script>window.__pwned=1</script>');
    expect(screen.getByLabelText('Log lines').textContent).toContain('onerror="window.__pwned=2"');
    expect((window as unknown as { __pwned?: number }).__pwned).toBeUndefined();
  });

  it('the timeline lists every event of /jobs/:id/events in order', async () => {
    signedInAs('viewer');
    jobRoutes();
    const { container } = renderAt(`/jobs/${ID}`);
    await waitFor(() => expect(container.querySelectorAll('.timeline li')).toHaveLength(3));
    expect([...container.querySelectorAll('.timeline li')].map((li) => li.getAttribute('data-event'))).toEqual(['enqueued', 'claimed', 'failed']);
  });

  it('a viewer gets no action; an operator gets retry, retry with edited payload, clone', async () => {
    signedInAs('viewer');
    jobRoutes();
    renderAt(`/jobs/${ID}`);
    await screen.findByText('Timeline');
    await screen.findByText('viewer@example.com');
    expect(screen.queryByRole('button', { name: /retry|cancel|clone/i })).toBeNull();
  });

  it('retry with an edited payload: a parse error blocks submit; a valid object is sent as {payload}', async () => {
    signedInAs('operator');
    jobRoutes();
    route(`POST /jobs/${ID}/retry`, aJob({ status: 'waiting', attempts: 0 }));
    renderAt(`/jobs/${ID}`);
    fireEvent.click(await screen.findByRole('button', { name: 'Retry with edited payload' }));
    const area = screen.getByLabelText('Payload for the retry');
    fireEvent.change(area, { target: { value: '{"to": ' } });
    expect(screen.getByRole('alert').textContent).toMatch(/JSON|Unexpected/);
    expect(screen.getByRole('button', { name: 'Retry with this payload' })).toHaveProperty('disabled', true);
    fireEvent.change(area, { target: { value: '{"to": "b@example.com"}' } });
    fireEvent.click(screen.getByRole('button', { name: 'Retry with this payload' }));
    await screen.findByText('Retried: now waiting');
    expect(calls.find((c) => c.method === 'POST')?.body).toEqual({ payload: { to: 'b@example.com' } });
  });

  it('cancel asks first; a refusal shows the error envelope', async () => {
    signedInAs('operator');
    jobRoutes({ status: 'waiting', lastError: null });
    route(`DELETE /jobs/${ID}`, envelope(409, 'conflict', 'job is completed'));
    renderAt(`/jobs/${ID}`);
    fireEvent.click(await screen.findByRole('button', { name: 'Cancel job' }));
    const dialog = screen.getByRole('alertdialog');
    fireEvent.click(within(dialog).getByRole('button', { name: 'Cancel' }));
    expect(screen.queryByRole('alertdialog')).toBeNull();
    expect(calls.some((c) => c.method === 'DELETE')).toBe(false);
    fireEvent.click(screen.getByRole('button', { name: 'Cancel job' }));
    fireEvent.click(within(screen.getByRole('alertdialog')).getByRole('button', { name: 'Cancel job' }));
    await screen.findByText('409 conflict: job is completed');
  });

  it('shows the concurrency key (— without one); a clone keeps it', async () => {
    signedInAs('operator');
    jobRoutes({ concurrencyKey: 'customer-42' });
    route('POST /jobs', { status: 201, body: aJob({ id: '0190f5a0-0000-7000-8000-000000000002', status: 'waiting', concurrencyKey: 'customer-42' }) });
    renderAt(`/jobs/${ID}`);
    const dd = (await screen.findByText('Concurrency key')).nextElementSibling;
    expect(dd?.textContent).toBe('customer-42');
    fireEvent.click(screen.getByRole('button', { name: 'Clone as new job' }));
    fireEvent.click(screen.getByRole('button', { name: 'Enqueue the copy' }));
    await waitFor(() => expect(calls.find((c) => c.method === 'POST')?.body).toMatchObject({ queue: 'emails', type: 'send', concurrencyKey: 'customer-42' }));
  });

  it('a job without a concurrency key shows —, and its clone sends none', async () => {
    signedInAs('operator');
    jobRoutes();
    route('POST /jobs', { status: 201, body: aJob({ id: '0190f5a0-0000-7000-8000-000000000002', status: 'waiting' }) });
    renderAt(`/jobs/${ID}`);
    expect((await screen.findByText('Concurrency key')).nextElementSibling?.textContent).toBe('—');
    fireEvent.click(screen.getByRole('button', { name: 'Clone as new job' }));
    fireEvent.click(screen.getByRole('button', { name: 'Enqueue the copy' }));
    await waitFor(() => expect(calls.some((c) => c.method === 'POST')).toBe(true));
    expect(calls.find((c) => c.method === 'POST')?.body).not.toHaveProperty('concurrencyKey');
  });

  it('a blocked job (v1.2 workflows): its badge, a timeline of enqueued blocked, cancelled, blocked again; an operator may cancel it, not retry it', async () => {
    signedInAs('operator');
    jobRoutes({ status: 'blocked', lastError: null, finishedAt: null, startedAt: null, attempts: 0 });
    const ev = (seq: number, event: string, from: string | null, to: string, reason: string | null = null) => ({ seq, at: '2026-12-01T10:00:00.000Z', event, from, to, attempt: null, workerId: null, reason, error: null, data: null });
    route(`GET /jobs/${ID}/events`, {
      items: [ev(1, 'enqueued', null, 'blocked'), ev(2, 'cancelled', 'blocked', 'cancelled', 'dependency_failed'), ev(3, 'blocked', 'cancelled', 'blocked', 'dependency_retried')],
    });
    route(`DELETE /jobs/${ID}`, aJob({ status: 'cancelled' }));
    const { container } = renderAt(`/jobs/${ID}`);
    await waitFor(() => expect(container.querySelectorAll('.timeline li')).toHaveLength(3));
    expect([...container.querySelectorAll('.timeline li')].map((li) => li.getAttribute('data-event'))).toEqual(['enqueued', 'cancelled', 'blocked']);
    expect(container.querySelector('.badge.s-blocked')?.textContent).toBe('blocked');
    expect(screen.queryByRole('button', { name: 'Retry' })).toBeNull();
    fireEvent.click(screen.getByRole('button', { name: 'Cancel job' }));
    fireEvent.click(within(screen.getByRole('alertdialog')).getByRole('button', { name: 'Cancel job' }));
    await waitFor(() => expect(calls.filter((c) => c.method === 'DELETE').map((c) => c.url.pathname)).toEqual([`/jobs/${ID}`]));
  });
});
