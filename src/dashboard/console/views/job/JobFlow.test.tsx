import { fireEvent, screen, waitFor, within } from '@testing-library/react';
import { describe, expect, it } from 'vitest';
import type { Job } from '../../api/types';
import { calls, envelope, route, serveFlow, type FakeFlowJob } from '../../test/fake-server';
import { aJob, renderAt, signedInAs } from '../../test/render';

const EVIL = '<img src=x onerror="window.__pwned=3">';
const FLOW = '0190f5a0-0000-7000-8000-0000000000f1';
const id = (n: number) => `0190f5a0-0000-7000-8000-${String(n).padStart(12, '0')}`;
const [A, B, C, D] = [id(1), id(2), id(3), id(4)];

/** A diamond: a → b, a → c, b + c → d; a completed, b active, c failed (d runs anyway). */
const diamond: FakeFlowJob[] = [
  { ref: 'a', id: A, status: 'completed', dependsOn: [], result: { rows: 42 } },
  { ref: 'b', id: B, status: 'active', dependsOn: [A] },
  { ref: 'c', id: C, status: 'failed', dependsOn: [A], lastError: `disk full ${EVIL}` },
  { ref: 'd', id: D, status: 'blocked', dependsOn: [B, C] },
];

/** GET /jobs/:id and its history for a job page. */
function jobPage(job: Job) {
  route(`GET /jobs/${job.id}`, job);
  route(`GET /jobs/${job.id}/events`, { items: [] });
  route(`GET /jobs/${job.id}/executions`, { items: [] });
  route(`GET /jobs/${job.id}/logs`, { items: [] });
}
const flowJob = (j: FakeFlowJob) => aJob({ id: j.id, status: j.status ?? 'completed', flowId: FLOW, flowRef: j.ref, lastError: null, finishedAt: null });
const texts = (el: Element, sel: string) => [...el.querySelectorAll(sel)].map((e) => e.textContent);
const TABLES: Record<string, string> = { Dependencies: 'Jobs it waits for', Dependents: 'Jobs that wait for it' };
const rows = (section: string) => [...screen.getByRole('region', { name: TABLES[section] }).querySelectorAll('tbody tr')].map((tr) => [...tr.querySelectorAll('td')].map((td) => td.textContent));

describe('job page: workflows', () => {
  it('a job outside flows shows no dependencies, dependents or flow, and asks for none', async () => {
    signedInAs('viewer');
    jobPage(aJob());
    renderAt(`/jobs/${id(1)}`);
    await screen.findByText('Timeline');
    expect(screen.queryByRole('region', { name: 'Dependencies' })).toBeNull();
    expect(screen.queryByRole('region', { name: 'Dependents' })).toBeNull();
    expect(screen.queryByRole('region', { name: 'Flow' })).toBeNull();
    expect(calls.some((c) => c.url.pathname.startsWith('/flows') || c.url.pathname.endsWith('/dependencies'))).toBe(false);
  });

  it('a viewer reads a flow job: its dependencies with result or last error, its dependents, the flow by depth with this job marked', async () => {
    signedInAs('viewer');
    serveFlow(FLOW, diamond);
    jobPage(flowJob(diamond[3]));
    const { container } = renderAt(`/jobs/${D}`);
    await screen.findByRole('region', { name: 'Dependencies' });
    await waitFor(() => expect(rows('Dependencies')).toEqual([
      ['b', 'active', '—'],
      ['c', 'failed', `disk full ${EVIL}`],
    ]));
    expect(container.querySelector('img')).toBeNull();
    expect(within(screen.getByRole('region', { name: 'Dependencies' })).getByRole('link', { name: 'b' }).getAttribute('href')).toBe(`/jobs/${B}`);
    await screen.findByRole('region', { name: 'Dependents' });
    expect(rows('Dependents')).toEqual([['No job of the flow waits for it.']]);
    const list = screen.getByRole('list', { name: 'Jobs of the flow by depth' });
    expect([...list.querySelectorAll('li')].map((li) => [li.getAttribute('data-ref'), li.getAttribute('data-depth'), li.getAttribute('aria-current')])).toEqual([
      ['a', '0', null],
      ['b', '1', null],
      ['c', '1', null],
      ['d', '2', 'true'],
    ]);
    expect(texts(list, '.badge')).toEqual(['completed', 'active', 'failed', 'blocked']);
    expect(list.querySelector('[aria-current] a')).toBeNull(); // this job is not a link to itself
    const flow = screen.getByRole('region', { name: 'Flow' });
    expect(flow.querySelector('.badge')?.textContent).toBe('running');
    expect(flow.querySelector('.flow-counts')?.textContent).toBe('1 active · 1 completed · 1 failed · 1 blocked');
    expect(within(flow).getByRole('link', { name: 'Jobs of this flow in the explorer' }).getAttribute('href')).toBe(`/jobs?flowId=${FLOW}`);
    await screen.findByText('viewer@example.com');
    expect(screen.queryByRole('button', { name: /retry|cancel|clone/i })).toBeNull(); // a viewer: nothing that changes anything
  });

  it('a root: its result-bearing dependents listed with what else they wait for; following a link opens that job', async () => {
    signedInAs('operator');
    serveFlow(FLOW, diamond);
    jobPage(flowJob(diamond[0]));
    jobPage(flowJob(diamond[2]));
    renderAt(`/jobs/${A}`);
    await screen.findByRole('region', { name: 'Dependents' });
    expect(rows('Dependents')).toEqual([
      ['b', 'active', '—'],
      ['c', 'failed', '—'],
    ]);
    expect(rows('Dependencies')).toEqual([['It waits for no job: a root of its flow.']]);
    fireEvent.click(within(screen.getByRole('region', { name: 'Dependents' })).getByRole('link', { name: 'c' }));
    await screen.findByText(C);
    await waitFor(() => expect(rows('Dependents')).toEqual([['d', 'blocked', 'b']]));
    expect(rows('Dependencies')).toEqual([['a', 'completed', '{"rows":42}']]);
  });

  it('the flow record gone (404): said so, with the dependencies still read from the job', async () => {
    signedInAs('viewer');
    serveFlow(FLOW, diamond, envelope(404, 'not_found', 'flow not found'));
    jobPage(flowJob(diamond[1]));
    renderAt(`/jobs/${B}`);
    await screen.findByText(/The flow's record is gone/);
    await waitFor(() => expect(rows('Dependencies')).toEqual([['a', 'completed', '{"rows":42}']]));
    expect(screen.queryByRole('region', { name: 'Dependents' })).toBeNull();
    expect(screen.queryByRole('list', { name: 'Jobs of the flow by depth' })).toBeNull();
    expect(within(screen.getByRole('region', { name: 'Flow' })).getByRole('link', { name: 'Jobs of this flow in the explorer' })).toBeTruthy();
    expect(calls.filter((c) => c.url.pathname === `/flows/${FLOW}`)).toHaveLength(1); // a 404 is an answer: not asked again
  });

  it('a refusal (403) is shown as it came, and nothing of the flow is drawn', async () => {
    signedInAs('viewer');
    serveFlow(FLOW, diamond, envelope(403, 'forbidden', 'not allowed'));
    route(`GET /jobs/${B}/dependencies`, envelope(403, 'forbidden', 'not allowed'));
    jobPage(flowJob(diamond[1]));
    renderAt(`/jobs/${B}`);
    await waitFor(() => expect(screen.getAllByRole('alert').map((a) => a.textContent)).toEqual([expect.stringContaining('not allowed'), expect.stringContaining('not allowed')]));
    expect(screen.queryByRole('list', { name: 'Jobs of the flow by depth' })).toBeNull();
    expect(screen.queryByText('completed')).toBeNull();
  });

  it('a wide flow: at most 200 lines drawn, the rest left to the explorer; deep levels indent at most 8 steps', async () => {
    signedInAs('viewer');
    const chain: FakeFlowJob[] = Array.from({ length: 1000 }, (_, i) => ({ ref: `s${i}`, id: id(100 + i), status: 'blocked', dependsOn: i ? [id(99 + i)] : [] }));
    serveFlow(FLOW, chain);
    jobPage(flowJob(chain[0]));
    renderAt(`/jobs/${chain[0].id}`);
    const list = await screen.findByRole('list', { name: 'Jobs of the flow by depth' });
    expect(list.querySelectorAll('li')).toHaveLength(200);
    expect(list.querySelectorAll('li')[150].className).toBe('d8');
    expect(list.querySelectorAll('li')[150].getAttribute('data-depth')).toBe('150');
    expect(screen.getByRole('region', { name: 'Flow' }).textContent).toContain('Showing 200 of 1,000');
  });
});
