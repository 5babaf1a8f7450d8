import { fireEvent, screen, waitFor } from '@testing-library/react';
import { describe, expect, it } from 'vitest';
import { calls, route } from '../../test/fake-server';
import { aJob, renderAt, signedInAs } from '../../test/render';
import { filterQuery } from './JobsView';

const id = (n: number) => `0190f5a0-0000-7000-8000-${String(n).padStart(12, '0')}`;

describe('jobs explorer', () => {
  it('filters come from the URL; Next follows nextCursor and Previous returns to the same page query', async () => {
    signedInAs('viewer');
    const pages: Record<string, { items: unknown[]; nextCursor: string | null }> = {
      '': { items: [aJob({ id: id(3) }), aJob({ id: id(2) })], nextCursor: 'c1' },
      c1: { items: [aJob({ id: id(1) })], nextCursor: null },
    };
    route('GET /jobs', ({ url }: { url: URL }) => pages[url.searchParams.get('cursor') ?? '']);
    renderAt('/jobs?queue=emails&status=failed');
    await screen.findByText(id(3).slice(-12));
    fireEvent.click(screen.getByRole('button', { name: 'Next →' }));
    await screen.findByText(id(1).slice(-12));
    expect(screen.queryByText(id(3).slice(-12))).toBeNull();
    expect(screen.getByRole('button', { name: 'Next →' })).toHaveProperty('disabled', true);
    fireEvent.click(screen.getByRole('button', { name: '← Previous' }));
    await screen.findByText(id(3).slice(-12));
    const queries = calls.filter((c) => c.url.pathname === '/jobs').map((c) => Object.fromEntries(c.url.searchParams));
    expect(queries[0]).toMatchObject({ queue: 'emails', status: 'failed' });
    expect(queries.map((q) => q.cursor ?? '')).toEqual(['', 'c1']); // the first page came back from the cache: same query
  });

  it('bulk retry of a selection asks first and reports per job', async () => {
    signedInAs('operator');
    route('GET /jobs', { items: [aJob({ id: id(1) }), aJob({ id: id(2) })], nextCursor: null });
    route(`POST /jobs/${id(1)}/retry`, aJob({ id: id(1), status: 'waiting' }));
    route(`POST /jobs/${id(2)}/retry`, aJob({ id: id(2), status: 'waiting' }));
    renderAt('/jobs?status=failed');
    fireEvent.click(await screen.findByRole('button', { name: 'Select page' }));
    fireEvent.click(screen.getByRole('button', { name: 'Retry selected' }));
    fireEvent.click(screen.getAllByRole('button', { name: 'Retry selected' }).at(-1)!);
    await screen.findByText('Retried 2 of 2');
    expect(calls.filter((c) => c.method === 'POST').map((c) => c.url.pathname).sort()).toEqual([`/jobs/${id(1)}/retry`, `/jobs/${id(2)}/retry`]);
  });
});

describe('jobs explorer: concurrency key', () => {
  it('is a column of the results (— for jobs without one)', async () => {
    signedInAs('viewer');
    route('GET /jobs', { items: [aJob({ id: id(2), concurrencyKey: 'customer-42' }), aJob({ id: id(1) })], nextCursor: null });
    renderAt('/jobs?queue=emails');
    await screen.findByText('customer-42');
    const region = screen.getByRole('region', { name: 'Jobs' });
    const headers = [...region.querySelectorAll('th')].map((th) => th.textContent);
    const col = headers.indexOf('Concurrency key');
    expect(col).toBeGreaterThan(-1);
    expect([...region.querySelectorAll('tbody tr')].map((tr) => tr.querySelectorAll('td')[col].textContent)).toEqual(['customer-42', '—']);
  });
});

describe('explorer filter query', () => {
  const form = (o: Record<string, string>) => {
    const f = new FormData();
    for (const [k, v] of Object.entries(o)) f.set(k, v);
    return f;
  };
  const NOW = Date.parse('2026-12-01T12:00:00.000Z');

  it('puts from/to as ISO and the payload as compact JSON in the URL', () => {
    const q = filterQuery(form({ queue: ' mail ', from: '2026-11-30T10:00:00Z', to: '', payload: '{ "orderId": 42 }' }), NOW);
    expect(typeof q === 'string' ? q : q.toString()).toBe(new URLSearchParams({ queue: 'mail', from: '2026-11-30T10:00:00.000Z', payload: '{"orderId":42}' }).toString());
  });

  it('a payload search without From looks back 7 days', () => {
    const q = filterQuery(form({ payload: '{"a":1}' }), NOW) as URLSearchParams;
    expect(q.get('from')).toBe('2026-11-24T12:00:00.000Z');
  });

  it('refuses a payload that is not a JSON object, and a time that is not one', () => {
    expect(filterQuery(form({ payload: '[1]' }), NOW)).toMatch(/JSON object/);
    expect(filterQuery(form({ payload: '{orderId: 42}' }), NOW)).toMatch(/must be JSON/);
    expect(filterQuery(form({ from: 'yesterday' }), NOW)).toBe('From is not a time');
  });

  it('the URL filters reach GET /jobs', async () => {
    signedInAs('viewer');
    route('GET /jobs', { items: [aJob({ id: id(1) })], nextCursor: null });
    renderAt(`/jobs?from=2026-11-30T10%3A00%3A00.000Z&payload=${encodeURIComponent('{"orderId":42}')}`);
    await screen.findByRole('link', { name: id(1).slice(-12) });
    const call = calls.find((c) => c.method === 'GET' && c.url.pathname === '/jobs');
    expect(call?.url.searchParams.get('from')).toBe('2026-11-30T10:00:00.000Z');
    expect(call?.url.searchParams.get('payload')).toBe('{"orderId":42}');
  });

  it('blocked (v1.2 workflows) is a status of the filter, from the URL to GET /jobs', async () => {
    signedInAs('viewer');
    route('GET /jobs', { items: [aJob({ id: id(1), status: 'blocked' })], nextCursor: null });
    renderAt('/jobs?status=blocked');
    await screen.findByRole('link', { name: id(1).slice(-12) });
    const select = screen.getByLabelText('Status') as HTMLSelectElement;
    expect([...select.options].map((o) => o.value)).toEqual(['', 'waiting', 'delayed', 'active', 'completed', 'failed', 'cancelled', 'blocked']);
    expect(select.value).toBe('blocked');
    expect(calls.find((c) => c.method === 'GET' && c.url.pathname === '/jobs')?.url.searchParams.get('status')).toBe('blocked');
  });
});

describe('jobs explorer: flows (v1.2 workflows)', () => {
  const FLOW = '0190f5a0-0000-7000-8000-0000000000f1';

  it('the flow filter goes from the form to the URL and GET /jobs; a flow id that is not a UUID is refused before sending', async () => {
    signedInAs('viewer');
    route('GET /jobs', ({ url }: { url: URL }) => ({ items: url.searchParams.get('flowId') ? [aJob({ id: id(7), flowId: FLOW, flowRef: 'resize' })] : [aJob({ id: id(1) })], nextCursor: null }));
    renderAt('/jobs');
    await screen.findByRole('link', { name: id(1).slice(-12) });
    const input = screen.getByLabelText('Flow id');
    fireEvent.change(input, { target: { value: 'flow-1' } });
    fireEvent.click(screen.getByRole('button', { name: 'Apply' }));
    expect(screen.getByRole('alert').textContent).toMatch(/Flow id is a UUID/);
    fireEvent.change(input, { target: { value: ` ${FLOW.toUpperCase()} ` } });
    fireEvent.click(screen.getByRole('button', { name: 'Apply' }));
    await screen.findByRole('link', { name: id(7).slice(-12) });
    expect(calls.filter((c) => c.url.pathname === '/jobs').map((c) => c.url.searchParams.get('flowId'))).toEqual([null, FLOW]);
    expect((screen.getByLabelText('Flow id') as HTMLInputElement).value).toBe(FLOW);
  });

  it('the Flow column links to the explorer filtered to that flow, with the job\'s ref; — outside flows', async () => {
    signedInAs('viewer');
    route('GET /jobs', ({ url }: { url: URL }) => ({ items: url.searchParams.get('flowId') === FLOW ? [aJob({ id: id(2), flowId: FLOW, flowRef: 'resize' })] : [aJob({ id: id(2), flowId: FLOW, flowRef: 'resize' }), aJob({ id: id(1) })], nextCursor: null }));
    renderAt('/jobs?queue=emails');
    const link = await screen.findByRole('link', { name: FLOW.slice(-12) });
    const region = screen.getByRole('region', { name: 'Jobs' });
    const col = [...region.querySelectorAll('th')].map((th) => th.textContent).indexOf('Flow');
    expect([...region.querySelectorAll('tbody tr')].map((tr) => tr.querySelectorAll('td')[col].textContent)).toEqual([`${FLOW.slice(-12)} resize`, '—']);
    expect(link.getAttribute('href')).toBe(`/jobs?flowId=${FLOW}`);
    fireEvent.click(link);
    await waitFor(() => expect(calls.filter((c) => c.url.pathname === '/jobs').at(-1)?.url.searchParams.get('flowId')).toBe(FLOW));
    expect((await screen.findByLabelText('Flow id') as HTMLInputElement).value).toBe(FLOW);
  });
});
