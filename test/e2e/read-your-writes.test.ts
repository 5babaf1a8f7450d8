import { startTestApi, TestApi } from '../support/http';
import { waitUntil } from '../support/timing';

/**
 * A client that watched a job finish (GET /jobs/:id reads Redis) and then asks
 * for its history (PostgreSQL) must find it, also on a brand-new queue: the
 * history endpoints wait for the history mirror to catch up.
 */
describe('history reads see what the client already saw (e2e)', () => {
  let api: TestApi;
  beforeAll(async () => {
    api = await startTestApi('e2e-ryw', { ROLE: 'all' });
  });
  afterAll(async () => {
    await api?.close();
  });

  it('events, executions, list, counts and the DLQ right after a job reads completed or failed, on fresh queues', async () => {
    for (let i = 0; i < 8; i++) {
      const queue = `ryw-${i}`;
      const ok = await api.http.post('/jobs').send({ type: 'diag.echo', queue, payload: { i } });
      const bad = await api.http.post('/jobs').send({ type: 'diag.fail', queue, payload: { message: 'no' }, maxAttempts: 1 });
      expect([ok.status, bad.status]).toEqual([201, 201]);
      await waitUntil('both finished', async () => {
        const [a, b] = await Promise.all([api.http.get(`/jobs/${ok.body.id}`), api.http.get(`/jobs/${bad.body.id}`)]);
        return (a.body.status === 'completed' && b.body.status === 'failed') || undefined;
      }, 20000, 2);
      const [events, executions, list, q, dlq] = await Promise.all([
        api.http.get(`/jobs/${ok.body.id}/events`),
        api.http.get(`/jobs/${ok.body.id}/executions`),
        api.http.get(`/jobs?queue=${queue}`),
        api.http.get(`/queues/${queue}`),
        api.http.get(`/jobs/dlq/all?queue=${queue}`),
      ]);
      expect(events.body.items.map((e: { event: string }) => e.event)).toEqual(['enqueued', 'claimed', 'completed']);
      expect(executions.body.items).toHaveLength(1);
      expect(executions.body.items[0].outcome).toBe('completed');
      expect(list.body.items.map((j: { id: string }) => j.id).sort()).toEqual([ok.body.id, bad.body.id].sort());
      expect(q.body.counts).toMatchObject({ completed: 1, failed: 1, waiting: 0, active: 0 });
      expect(dlq.body.items.map((j: { id: string }) => j.id)).toEqual([bad.body.id]);
    }
  });
});
