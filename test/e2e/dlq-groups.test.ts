import { errorFingerprint } from '../../src/core/error-fingerprint';
import { startTestApi, TestApi } from '../support/http';
import { waitUntil } from '../support/timing';

type J = { id: string; status: string; queue: string; type: string; lastError: string | null; fingerprint: string | null };
type G = { fingerprint: string; sample: string; count: number; types: string[]; queues: string[]; firstAt: string; lastAt: string };

/**
 * API.md v1.1 "Dead-letter groups" on the full stack: the mirror writer
 * stores each failure's fingerprint when it mirrors the `failed` event; the
 * job object read live from Redis computes it from lastError, and the two
 * agree; GET /jobs/dlq/groups aggregates them; POST /jobs/dlq/retry takes a
 * fingerprint (AND queue/type).
 */
describe('dead-letter groups (e2e)', () => {
  let api: TestApi;
  beforeAll(async () => {
    api = await startTestApi('e2e-dlqgroups', { ROLE: 'api,worker,audit', WORKER_CONCURRENCY: '8' });
  });
  afterAll(async () => {
    await api?.close();
  });

  async function deadLetter(queue: string, messages: string[], type = 'diag.fail'): Promise<string[]> {
    const res = await api.http.post('/jobs/batch').send({ jobs: messages.map((message) => ({ type, queue, payload: { message }, maxAttempts: 1 })) });
    expect(res.status).toBe(201);
    return res.body.jobs.map((j: J) => j.id);
  }
  const dlqAll = async (query: Record<string, string | number>) => {
    const res = await api.http.get('/jobs/dlq/all').query({ limit: 500, ...query });
    expect(res.status).toBe(200);
    return res.body.items as J[];
  };
  const groups = async (query: Record<string, string | number> = {}) => {
    const res = await api.http.get('/jobs/dlq/groups').query(query);
    expect(res.status).toBe(200);
    return res.body.items as G[];
  };

  it('stores the fingerprint at failure, agrees with the live job, groups and retries by it', async () => {
    const orders = await deadLetter('grp-a', ['order 41 not found', 'order 42 not found', 'order 9000 not found']);
    const timeouts = await deadLetter('grp-a', ['upstream https://pay.example.com/v1/charge/17 timed out after 3000 ms', 'upstream http://10.0.0.7:8080/x timed out after 12 ms']);
    const otherQueue = await deadLetter('grp-b', ['order 7 not found']);
    const all = [...orders, ...timeouts, ...otherQueue];
    await waitUntil('all in the DLQ copy', async () => (await dlqAll({})).filter((j) => all.includes(j.id)).length === all.length, 20000, 100);

    const fOrder = errorFingerprint('order 1 not found') as string;
    const fTimeout = errorFingerprint('upstream http://x timed out after 1 ms') as string;
    // The DLQ copy's fingerprint is the one the writer stored; the live job's is computed from lastError (Redis).
    for (const j of await dlqAll({})) {
      if (!all.includes(j.id)) continue;
      expect(j.fingerprint).toBe(orders.includes(j.id) || otherQueue.includes(j.id) ? fOrder : fTimeout);
      const live = (await api.http.get(`/jobs/${j.id}`)).body as J;
      expect(live.status).toBe('failed');
      expect(live.fingerprint).toBe(j.fingerprint);
    }
    const rows = (await api.db.dataSource.query(`SELECT fingerprint FROM dead_letter_jobs WHERE job_id = ANY($1::uuid[])`, [all])) as { fingerprint: string | null }[];
    expect(rows.map((r) => r.fingerprint).sort()).toEqual([fOrder, fOrder, fOrder, fOrder, fTimeout, fTimeout].sort());

    const g = await groups();
    expect(g.map((x) => [x.fingerprint, x.count])).toEqual([
      [fOrder, 4],
      [fTimeout, 2],
    ]);
    expect(g[0]).toMatchObject({ types: ['diag.fail'], queues: ['grp-a', 'grp-b'] });
    expect(g[0].sample).toMatch(/^order \d+ not found$/);
    expect(Date.parse(g[0].firstAt)).toBeLessThanOrEqual(Date.parse(g[0].lastAt));
    expect((await groups({ queue: 'grp-b' })).map((x) => [x.fingerprint, x.count])).toEqual([[fOrder, 1]]);
    expect((await dlqAll({ fingerprint: fTimeout })).map((j) => j.id).sort()).toEqual([...timeouts].sort());

    // Retry by fingerprint AND queue: only grp-a's order failures.
    const r = await api.http.post('/jobs/dlq/retry').send({ fingerprint: fOrder, queue: 'grp-a' });
    expect(r.status).toBe(200);
    expect(r.body).toEqual({ retried: 3 });
    const back = (await api.http.get(`/jobs/${otherQueue[0]}`)).body as J;
    expect(back.status).toBe('failed');
    // A job that is not failed has no fingerprint.
    const done = await api.http.post('/jobs').send({ type: 'diag.echo', queue: 'grp-c', payload: {} });
    expect(done.body.fingerprint).toBeNull();
  });

  it('400 for a malformed fingerprint or limit', async () => {
    const a = await api.http.post('/jobs/dlq/retry').send({ fingerprint: 'nope' });
    expect(a.status).toBe(400);
    expect(a.body.error.details[0].path).toBe('fingerprint');
    const b = await api.http.get('/jobs/dlq/groups').query({ limit: 0 });
    expect(b.status).toBe(400);
    expect(b.body.error.details[0].path).toBe('limit');
    const c = await api.http.get('/jobs/dlq/all').query({ fingerprint: 'x' });
    expect(c.status).toBe(400);
  });
});
