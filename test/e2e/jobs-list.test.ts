import { startTestApi, TestApi } from '../support/http';
import { waitUntil } from '../support/timing';

/**
 * GET /jobs (API.md "Jobs"): the PostgreSQL listing, newest first, keyset
 * pagination without overlap or skip, filters, and 400 naming the bad field.
 * No worker role: the jobs stay where they were enqueued.
 */
describe('GET /jobs (e2e)', () => {
  let api: TestApi;
  const ids: string[] = [];
  beforeAll(async () => {
    api = await startTestApi('e2e-jobs-list', { ROLE: 'api,audit' });
    const a = await api.http.post('/jobs/batch').send({ jobs: Array.from({ length: 17 }, (_, i) => ({ type: 'diag.echo', queue: 'lista', payload: { i } })) });
    const b = await api.http.post('/jobs/batch').send({ jobs: Array.from({ length: 6 }, (_, i) => ({ type: 'diag.sleep', queue: 'listb', delayMs: 3_600_000, payload: { i } })) });
    expect([a.status, b.status]).toEqual([201, 201]);
    ids.push(...a.body.jobs.map((j: { id: string }) => j.id), ...b.body.jobs.map((j: { id: string }) => j.id));
    await waitUntil('all jobs mirrored', async () => (await api.http.get('/jobs?limit=500')).body.items?.length === ids.length, 20000, 100);
  }, 60000);
  afterAll(async () => {
    await api?.close();
  });

  it('pages through every job exactly once, newest first, with ISO times', async () => {
    const seen: string[] = [];
    let cursor: string | null = null;
    let pages = 0;
    do {
      const res = await api.http.get('/jobs').query(cursor ? { limit: 5, cursor } : { limit: 5 });
      expect(res.status).toBe(200);
      expect(res.body.items.length).toBeLessThanOrEqual(5);
      seen.push(...res.body.items.map((j: { id: string }) => j.id));
      for (const j of res.body.items) expect(j.createdAt).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
      cursor = res.body.nextCursor;
      pages++;
    } while (cursor && pages < 20);
    expect(pages).toBe(5); // 23 jobs by 5
    expect(new Set(seen).size).toBe(seen.length);
    expect([...seen].sort()).toEqual([...ids].sort());
    // UUIDv7 ids sort by creation: newest first means descending ids.
    expect(seen).toEqual([...ids].sort().reverse());
  });

  it('a page enqueued between reads does not shift the next page', async () => {
    const first = await api.http.get('/jobs').query({ queue: 'lista', limit: 10 });
    const added = await api.http.post('/jobs').send({ type: 'diag.echo', queue: 'lista' });
    await waitUntil('new job mirrored', async () => (await api.http.get('/jobs').query({ queue: 'lista', limit: 1 })).body.items[0]?.id === added.body.id, 20000, 100);
    const second = await api.http.get('/jobs').query({ queue: 'lista', limit: 10, cursor: first.body.nextCursor });
    const all = [...first.body.items, ...second.body.items].map((j: { id: string }) => j.id);
    expect(all).toHaveLength(17);
    expect(new Set(all).size).toBe(17);
    expect(second.body.nextCursor).toBeNull();
    expect(all).not.toContain(added.body.id);
  });

  it('filters by queue, status and type', async () => {
    const delayed = await api.http.get('/jobs').query({ status: 'delayed', limit: 500 });
    expect(delayed.status).toBe(200);
    expect(delayed.body.items).toHaveLength(6);
    expect(delayed.body.items.every((j: { status: string; queue: string }) => j.status === 'delayed' && j.queue === 'listb')).toBe(true);
    expect(delayed.body.nextCursor).toBeNull();
    const byType = await api.http.get('/jobs').query({ type: 'diag.sleep', queue: 'listb' });
    expect(byType.body.items).toHaveLength(6);
    const none = await api.http.get('/jobs').query({ queue: 'nope' });
    expect(none.body).toEqual({ items: [], nextCursor: null });
  });

  it('status=blocked (v1.2 workflows) is a status filter like the others: no job here is blocked', async () => {
    for (const query of [{ status: 'blocked' }, { status: 'blocked', queue: 'lista' }, { status: 'blocked', type: 'diag.echo' }]) {
      const res = await api.http.get('/jobs').query(query);
      expect([res.status, res.body]).toEqual([200, { items: [], nextCursor: null }]);
    }
  });

  it.each([
    ['limit=0', 'limit'],
    ['limit=501', 'limit'],
    ['limit=abc', 'limit'],
    ['limit=2.5', 'limit'],
    ['status=bogus', 'status'],
    ['cursor=not-a-cursor', 'cursor'],
    ['cursor=' + 'A'.repeat(22) + '&limit=3&status=nope', 'status'],
    ['bogus=1', 'bogus'],
  ])('400 validation_failed naming the field: ?%s', async (qs, field) => {
    const res = await api.http.get(`/jobs?${qs}`);
    expect(res.status).toBe(400);
    expect(res.body.error.code).toBe('validation_failed');
    expect(res.body.error.details.map((d: { path: string }) => d.path)).toContain(field);
  });
});
