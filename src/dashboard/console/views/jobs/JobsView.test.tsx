import { fireEvent, screen } from '@testing-library/react';
import { describe, expect, it } from 'vitest';
import { calls, route } from '../../test/fake-server';
import { aJob, renderAt, signedInAs } from '../../test/render';

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
