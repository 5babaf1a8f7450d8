import { fireEvent, screen, waitFor, within } from '@testing-library/react';
import { describe, expect, it } from 'vitest';
import type { QueueKey } from '../../api/types';
import { calls, envelope, route } from '../../test/fake-server';
import { renderAt, signedInAs } from '../../test/render';

const queue = {
  name: 'emails',
  paused: false,
  maxConcurrency: null,
  rateLimit: null,
  defaults: { maxAttempts: 3, backoff: { type: 'exponential', delayMs: 2000, maxDelayMs: 3600000, jitter: 'equal' }, timeoutMs: 600000 },
  external: false,
  counts: { waiting: 12, delayed: 0, active: 3, completed: 0, failed: 0, cancelled: 0 },
  keyConcurrency: 2,
  keyRateLimit: null,
  fairness: 'round_robin',
  agingMs: null,
};

const QUEUE_LIMITS = { concurrency: 2, rateLimit: null };
const key = (k: string, waiting: number, active: number, overrides: QueueKey['overrides'] = null): QueueKey => ({
  key: k,
  waiting,
  active,
  overrides,
  limits: overrides ? { concurrency: overrides.concurrency ?? QUEUE_LIMITS.concurrency, rateLimit: overrides.rateLimit ?? QUEUE_LIMITS.rateLimit } : QUEUE_LIMITS,
});

/** The server's key list, changed by PUT/DELETE like the real one (PUT merges, null clears). */
function keysServer(initial: QueueKey[]) {
  const keys = new Map(initial.map((k) => [k.key, k]));
  route('GET /queues/emails', queue);
  route('GET /jobs', { items: [], nextCursor: null });
  route('GET /queues/emails/keys', () => ({ items: [...keys.values()] }));
  const put = ({ url, body }: { url: URL; body: unknown }) => {
    const name = decodeURIComponent(url.pathname.split('/').at(-1)!);
    const prev = keys.get(name) ?? key(name, 0, 0);
    const b = body as { concurrency?: number | null; rateLimit?: { max: number; durationMs: number } | null };
    const overrides = { concurrency: prev.overrides?.concurrency ?? null, rateLimit: prev.overrides?.rateLimit ?? null, ...b };
    const next = key(name, prev.waiting, prev.active, overrides);
    keys.set(name, next);
    return next;
  };
  const del = ({ url }: { url: URL }) => {
    const name = decodeURIComponent(url.pathname.split('/').at(-1)!);
    const next = key(name, keys.get(name)?.waiting ?? 0, keys.get(name)?.active ?? 0);
    keys.set(name, next);
    return next;
  };
  return { keys, put, del };
}

const rowOf = (k: string) => screen.getByText(k, { selector: 'td .mono' }).closest('tr') as HTMLElement;
const cells = (tr: HTMLElement) => [...tr.querySelectorAll('td')].map((td) => td.textContent);

describe('queue view: busiest keys', () => {
  it('a viewer sees each key with waiting, active, the limits in force and the override marker, and no edit control', async () => {
    signedInAs('viewer');
    keysServer([key('acme', 9, 2, { concurrency: 5, rateLimit: { max: 10, durationMs: 1000 } }), key('globex', 3, 1), key('premium', 0, 0, { concurrency: 50, rateLimit: null })]);
    renderAt('/queues/emails');
    await screen.findByText('acme', { selector: 'td .mono' });
    expect(cells(rowOf('acme'))).toEqual(['acme', '9', '2', '5', '10 per 1.0 s', 'override concurrency, rate limit']);
    expect(cells(rowOf('globex'))).toEqual(['globex', '3', '1', '2', 'none', '—']);
    expect(cells(rowOf('premium'))).toEqual(['premium', '0', '0', '50', 'none', 'override concurrency']);
    // The order is the server's (busiest first, then override-only keys).
    expect([...screen.getByRole('region', { name: 'Busiest keys of emails' }).querySelectorAll('tbody tr')].map((tr) => tr.querySelector('td')?.textContent)).toEqual(['acme', 'globex', 'premium']);
    expect(screen.getByText(/Keys without an override: concurrency 2, rate limit none; fairness round_robin/)).toBeTruthy();
    await screen.findByText('viewer@example.com');
    expect(screen.queryByRole('button', { name: /override/i })).toBeNull();
    expect(calls.find((c) => c.url.pathname === '/queues/emails/keys')?.url.searchParams.get('limit')).toBe('20');
  });

  it('an operator edits an override: local checks first, then PUT with both fields; the list shows it', async () => {
    signedInAs('operator');
    const s = keysServer([key('acme', 9, 2, { concurrency: 5, rateLimit: null })]);
    route('PUT /queues/emails/keys/acme', s.put);
    renderAt('/queues/emails');
    fireEvent.click(await screen.findByRole('button', { name: 'Edit override of key acme' }));
    const form = screen.getByRole('form', { name: 'Override for key acme' });
    const conc = within(form).getByLabelText('Concurrency of this key');
    expect((conc as HTMLInputElement).value).toBe('5');
    expect(document.activeElement).toBe(conc);
    fireEvent.change(conc, { target: { value: '100001' } });
    fireEvent.change(within(form).getByLabelText('Rate limit of this key: starts'), { target: { value: '10' } });
    fireEvent.click(within(form).getByRole('button', { name: 'Save override' }));
    expect(conc.getAttribute('aria-invalid')).toBe('true');
    expect(within(form).getByText('must be an integer 1..100000')).toBeTruthy();
    expect(within(form).getByText('needed with a number of starts')).toBeTruthy();
    expect(calls.some((c) => c.method === 'PUT')).toBe(false);
    fireEvent.change(conc, { target: { value: '7' } });
    fireEvent.change(within(form).getByLabelText('Rate limit of this key: per (ms)'), { target: { value: '60000' } });
    fireEvent.click(within(form).getByRole('button', { name: 'Save override' }));
    await screen.findByText('Override of key acme saved: concurrency 7, rate limit 10 per 1 min.');
    expect(calls.find((c) => c.method === 'PUT')?.body).toEqual({ concurrency: 7, rateLimit: { max: 10, durationMs: 60000 } });
    expect(screen.queryByRole('form', { name: 'Override for key acme' })).toBeNull();
    await waitFor(() => expect(cells(rowOf('acme'))).toEqual(['acme', '9', '2', '7', '10 per 1 min', 'override concurrency, rate limit', 'Edit override']));
  });

  it("the server's 400 message is shown and its details land on their fields", async () => {
    signedInAs('admin');
    keysServer([key('acme', 1, 0)]);
    route('PUT /queues/emails/keys/acme', envelope(400, 'validation_failed', 'invalid body', [{ path: 'rateLimit.durationMs', message: 'must not be greater than 86400000' }]));
    renderAt('/queues/emails');
    fireEvent.click(await screen.findByRole('button', { name: 'Set override of key acme' }));
    const form = screen.getByRole('form', { name: 'Override for key acme' });
    fireEvent.change(within(form).getByLabelText('Rate limit of this key: starts'), { target: { value: '3' } });
    fireEvent.change(within(form).getByLabelText('Rate limit of this key: per (ms)'), { target: { value: '1000' } });
    fireEvent.click(within(form).getByRole('button', { name: 'Save override' }));
    await within(form).findByText('400 validation_failed: invalid body');
    expect(within(form).getByText('must not be greater than 86400000')).toBeTruthy();
    expect(within(form).getByLabelText('Rate limit of this key: per (ms)').getAttribute('aria-invalid')).toBe('true');
    expect(calls.find((c) => c.method === 'PUT')?.body).toEqual({ concurrency: null, rateLimit: { max: 3, durationMs: 1000 } });
  });

  it('an override with neither limit is refused here (removing is what goes back to the queue\'s)', async () => {
    signedInAs('operator');
    keysServer([key('acme', 1, 0, { concurrency: 4, rateLimit: null })]);
    renderAt('/queues/emails');
    fireEvent.click(await screen.findByRole('button', { name: 'Edit override of key acme' }));
    const form = screen.getByRole('form', { name: 'Override for key acme' });
    fireEvent.change(within(form).getByLabelText('Concurrency of this key'), { target: { value: '' } });
    fireEvent.click(within(form).getByRole('button', { name: 'Save override' }));
    expect(within(form).getByText(/Set a concurrency or a rate limit/).getAttribute('role')).toBe('status');
    expect(calls.some((c) => c.method === 'PUT')).toBe(false);
  });

  it('remove asks first, then DELETEs and the marker goes', async () => {
    signedInAs('operator');
    const s = keysServer([key('acme', 9, 2, { concurrency: 5, rateLimit: null })]);
    route('DELETE /queues/emails/keys/acme', s.del);
    renderAt('/queues/emails');
    fireEvent.click(await screen.findByRole('button', { name: 'Edit override of key acme' }));
    fireEvent.click(screen.getByRole('button', { name: 'Remove override' }));
    expect(calls.some((c) => c.method === 'DELETE')).toBe(false);
    fireEvent.click(within(screen.getByRole('alertdialog')).getByRole('button', { name: 'Remove override' }));
    await screen.findByText('Override of key acme removed.');
    expect(calls.filter((c) => c.method === 'DELETE').map((c) => c.url.pathname)).toEqual(['/queues/emails/keys/acme']);
    await waitFor(() => expect(cells(rowOf('acme'))).toEqual(['acme', '9', '2', '2', 'none', '—', 'Set override']));
  });

  it('a key typed in is one encoded path segment; "." and ".." are refused before any request', async () => {
    signedInAs('operator');
    const s = keysServer([]);
    route('PUT /queues/emails/keys/acme%2Feu%20%231', s.put);
    renderAt('/queues/emails');
    await screen.findByText('No keyed job waiting or active, and no override.');
    fireEvent.click(screen.getByRole('button', { name: 'Override a key…' }));
    const form = screen.getByRole('form', { name: 'Override for a key' });
    const keyInput = within(form).getByLabelText('Key');
    expect(document.activeElement).toBe(keyInput);
    fireEvent.change(within(form).getByLabelText('Concurrency of this key'), { target: { value: '1' } });
    for (const bad of ['..', '.', '', 'x'.repeat(129)]) {
      fireEvent.change(keyInput, { target: { value: bad } });
      fireEvent.click(within(form).getByRole('button', { name: 'Save override' }));
      expect([bad, keyInput.getAttribute('aria-invalid')]).toEqual([bad, 'true']);
    }
    expect(calls.some((c) => c.method === 'PUT')).toBe(false);
    fireEvent.change(keyInput, { target: { value: 'acme/eu #1' } });
    fireEvent.click(within(form).getByRole('button', { name: 'Save override' }));
    await screen.findByText('Override of key acme/eu #1 saved: concurrency 1, rate limit none.');
    expect(calls.filter((c) => c.method === 'PUT').map((c) => c.url.pathname)).toEqual(['/queues/emails/keys/acme%2Feu%20%231']);
    await screen.findByText('acme/eu #1', { selector: 'td .mono' });
  });

  it('"Show more keys" asks for a longer list when the first one is full', async () => {
    signedInAs('viewer');
    keysServer([]);
    route('GET /queues/emails/keys', ({ url }: { url: URL }) => ({ items: Array.from({ length: Math.min(Number(url.searchParams.get('limit')), 25) }, (_, i) => key(`k${i}`, 25 - i, 0)) }));
    renderAt('/queues/emails');
    await screen.findByText('k19', { selector: 'td .mono' });
    fireEvent.click(screen.getByRole('button', { name: 'Show more keys (up to 100)' }));
    await screen.findByText('k24', { selector: 'td .mono' });
    expect(screen.queryByRole('button', { name: /Show more keys/ })).toBeNull();
    expect(calls.filter((c) => c.url.pathname === '/queues/emails/keys').map((c) => c.url.searchParams.get('limit'))).toEqual(['20', '100']);
  });

  it('without the keys route (a server before issue 20) the panel says so; the rest of the view works', async () => {
    signedInAs('operator');
    route('GET /queues/emails', { ...queue, keyConcurrency: undefined, keyRateLimit: undefined, fairness: undefined, agingMs: undefined });
    route('GET /jobs', { items: [], nextCursor: null });
    renderAt('/queues/emails');
    await screen.findByText(/Could not load keys: 404 not_found/);
    expect(screen.getByRole('button', { name: 'Pause queue' })).toBeTruthy();
  });
});
