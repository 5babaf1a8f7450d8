import { HEARTBEAT_MS, LiveHub, MAX_SSE_CONNECTIONS } from '../../src/dashboard/live/live-hub';
import { startTestApi, TestApi } from '../support/http';
import { openSse, SseStream } from '../support/sse';
import { waitUntil } from '../support/timing';

type JobNote = { id: string; queue: string; status: string; updatedAt: string };

/**
 * `GET /dashboard/events` (Server-Sent Events) read by a real HTTP client:
 * counts and job changes (published by the mirror writer after each commit),
 * the `?job=` stream of one job's events, logs and progress, heartbeats,
 * the connection cap.
 */
describe('GET /dashboard/events (e2e)', () => {
  let api: TestApi;
  const open: SseStream[] = [];
  const sse = async (path: string) => {
    const s = await openSse(api.url + path);
    open.push(s);
    return s;
  };
  beforeAll(async () => {
    api = await startTestApi('e2e-live', { ROLE: 'api,worker,audit', WORKER_CONCURRENCY: '4' });
  });
  afterEach(() => {
    for (const s of open.splice(0)) s.close();
  });
  afterAll(async () => {
    await api?.close();
  });

  it('streams counts, then job changes as the audit writer commits them', async () => {
    const s = await sse('/dashboard/events');
    expect(s.status).toBe(200);
    expect(s.headers['content-type']).toMatch(/^text\/event-stream/);
    expect(s.headers['x-request-id']).toBeTruthy();
    const first = await s.waitFor((e) => e.event === 'counts');
    expect(first.data).toMatchObject({ totals: expect.any(Object), workers: expect.any(Object) });
    // Give the writers a moment to see the listener key (checked at each ownership round, ≤ 1 s).
    await new Promise((r) => setTimeout(r, 1200));
    const res = await api.http.post('/jobs').send({ type: 'diag.echo', queue: 'live-a', payload: { n: 1 } });
    const id = res.body.id as string;
    const done = await s.waitFor((e) => e.event === 'job' && (e.data as JobNote).id === id && (e.data as JobNote).status === 'completed');
    expect(done.data).toEqual({ id, queue: 'live-a', status: 'completed', updatedAt: expect.stringMatching(/Z$/) });
    // The counts follow (sent only when changed, at most once a second).
    await s.waitFor((e) => e.event === 'counts' && (e.data as { queues: Record<string, { completed: number }> }).queues['live-a']?.completed === 1);
    const n = s.events.filter((e) => e.event === 'counts').length;
    await new Promise((r) => setTimeout(r, 2200));
    // Nothing changed since: no new counts (a heartbeat-free idle stream).
    expect(s.events.filter((e) => e.event === 'counts').length).toBe(n);
  });

  it('?job= streams that job: its object, events and log lines as they happen', async () => {
    // An external queue: this test drives the job through the worker protocol.
    await api.http.put('/queues/live-x').send({ external: true });
    const id = (await api.http.post('/jobs').send({ type: 'anything', queue: 'live-x', payload: {} })).body.id as string;
    const s = await sse(`/dashboard/events?job=${id}`);
    expect(s.status).toBe(200);
    await s.waitFor((e) => e.event === 'event' && (e.data as { event: string }).event === 'enqueued');
    await s.waitFor((e) => e.event === 'job' && (e.data as { id: string }).id === id);
    await new Promise((r) => setTimeout(r, 1200));
    const claim = await api.http.post('/queues/live-x/claim').send({ workerId: 'w-live', max: 1 });
    const lockToken = claim.body.jobs[0].lockToken as string;
    await s.waitFor((e) => e.event === 'event' && (e.data as { event: string }).event === 'claimed');
    await api.http.post(`/jobs/${id}/heartbeat`).send({ lockToken, progress: 42, logs: ['half way'] });
    await s.waitFor((e) => e.event === 'log' && (e.data as { message: string }).message === 'half way');
    await s.waitFor((e) => e.event === 'job' && (e.data as { progress: unknown }).progress === 42);
    await api.http.post(`/jobs/${id}/complete`).send({ lockToken, result: { ok: true } });
    await s.waitFor((e) => e.event === 'job' && (e.data as { status: string }).status === 'completed');
    // Each event once, in order.
    const names = s.events.filter((e) => e.event === 'event').map((e) => (e.data as { event: string }).event);
    expect(names).toEqual(['enqueued', 'claimed', 'progress', 'completed']);
    // Only this job's stream: no counts.
    expect(s.events.some((e) => e.event === 'counts')).toBe(false);
  });

  it('?job= of an unknown job is 404, of a malformed id 400', async () => {
    const a = await sse('/dashboard/events?job=01a22977-706d-723e-926f-fd3ef1eef745');
    expect(a.status).toBe(404);
    const b = await sse('/dashboard/events?job=nope');
    expect(b.status).toBe(400);
  });

  it(`holds at most ${MAX_SSE_CONNECTIONS} streams (503 beyond) and sends heartbeats`, async () => {
    const hub = api.app.get(LiveHub);
    expect(HEARTBEAT_MS).toBe(15_000);
    const streams = await Promise.all(Array.from({ length: MAX_SSE_CONNECTIONS }, () => sse('/dashboard/events')));
    expect(streams.every((s) => s.status === 200)).toBe(true);
    const over = await sse('/dashboard/events');
    expect(over.status).toBe(503);
    expect(JSON.parse(over.body || '{}').error?.code).toBe('unavailable');
    for (const s of streams) s.close();
    await waitUntil('streams closed', async () => hub.size === 0, 5000, 20);
    hub.heartbeatMs = 200; // read when the first stream opens
    const s = await sse('/dashboard/events');
    await waitUntil('a heartbeat', async () => s.comments.includes('heartbeat'), 3000, 20);
  });
});
