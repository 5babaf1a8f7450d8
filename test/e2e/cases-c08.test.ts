import { startTestApi, TestApi } from '../support/http';
import { waitUntil } from '../support/timing';

/**
 * C8 — DLQ retry really retries (CASES.md), through HTTP: a job
 * dead-lettered after exhausting its attempts, retried with
 * POST /jobs/:id/retry and a payload that makes it succeed, starts with
 * fresh counters and completes; the audit shows `retried_from_dlq`.
 */
describe('C8: DLQ retry really retries (e2e)', () => {
  let api: TestApi;
  beforeAll(async () => {
    api = await startTestApi('e2e-c08', { ROLE: 'all' });
  });
  afterAll(async () => {
    await api?.close();
  });

  const events = async (id: string): Promise<string[]> => (await api.http.get(`/jobs/${id}/events`)).body.items.map((e: { event: string }) => e.event);

  it('dead-lettered after maxAttempts, retried with a fixing payload, completes with fresh counters', async () => {
    const created = await api.http.post('/jobs').send({
      type: 'diag.fail',
      queue: 'c08',
      payload: { message: 'still broken', times: 10 },
      maxAttempts: 3,
      backoff: { type: 'fixed', delayMs: 50, jitter: 'none' },
    });
    expect(created.status).toBe(201);
    const id = created.body.id;

    // Exhausted: three attempts, then the DLQ (listed from PostgreSQL).
    const dead = await waitUntil('job in the DLQ listing', async () => {
      const items = (await api.http.get('/jobs/dlq/all').query({ queue: 'c08' })).body.items as { id: string }[];
      return items.find((j) => j.id === id);
    }, 30000, 100);
    expect(dead).toMatchObject({ status: 'failed', attempts: 3, maxAttempts: 3, lastError: 'still broken' });
    const before = await events(id);
    expect(before.filter((e) => e === 'claimed')).toHaveLength(3);
    expect(before.filter((e) => e === 'retry_scheduled')).toHaveLength(2);
    expect(before[before.length - 1]).toBe('failed');

    const retried = await api.http.post(`/jobs/${id}/retry`).send({ payload: { message: 'fixed', times: 0 } });
    expect(retried.status).toBe(200);
    expect(retried.body).toMatchObject({ id, status: 'waiting', attempts: 0, maxAttempts: 3, payload: { message: 'fixed', times: 0 }, finishedAt: null });

    await waitUntil('retried job completed', async () => (await api.http.get(`/jobs/${id}`)).body.status === 'completed', 20000, 50);
    const done = (await api.http.get(`/jobs/${id}`)).body;
    // Fresh counters: the retry's first execution is attempt 1 again.
    expect(done).toMatchObject({ status: 'completed', attempts: 1, result: { succeededOnAttempt: 1 }, payload: { message: 'fixed', times: 0 } });

    const ev = await waitUntil('completion mirrored', async () => {
      const e = await events(id);
      return e.includes('completed') && e;
    }, 20000, 100);
    expect(ev.slice(-4)).toEqual(['failed', 'retried_from_dlq', 'claimed', 'completed']);
    const retriedEvent = (await api.http.get(`/jobs/${id}/events`)).body.items.find((e: { event: string }) => e.event === 'retried_from_dlq');
    expect(retriedEvent).toMatchObject({ from: 'failed', to: 'waiting', attempt: 0 });

    const execs = (await api.http.get(`/jobs/${id}/executions`)).body.items as { executionSeq: number; attempt: number; outcome: string }[];
    expect(execs.map((x) => [x.executionSeq, x.attempt, x.outcome])).toEqual([
      [1, 1, 'failed'],
      [2, 2, 'failed'],
      [3, 3, 'failed'],
      [4, 1, 'completed'],
    ]);
    // It left the DLQ.
    const dlq = (await api.http.get('/jobs/dlq/all').query({ queue: 'c08' })).body.items as { id: string }[];
    expect(dlq.map((j) => j.id)).not.toContain(id);
  }, 60000);
});
