import { request as httpRequest } from 'node:http';
import { JobStore, QueueStore } from '../../src/core/ports';
import { HistoryQueries } from '../../src/history';
import { reapExpiredLeases } from '../../src/maintenance/reaper';
import { startTestApi, TestApi } from '../support/http';
import { sleep } from '../support/redis';
import { waitUntil } from '../support/timing';

/**
 * The external worker protocol over HTTP (API.md): claim (long poll),
 * heartbeat, complete, fail; fencing by lock token. Roles api+audit+scheduler:
 * events, logs and the DLQ are mirrored to Postgres; the reaper expires leases.
 */
describe('external worker protocol (e2e)', () => {
  let api: TestApi;
  let history: HistoryQueries;

  beforeAll(async () => {
    api = await startTestApi('e2e-external', { ROLE: 'api,audit,scheduler', REAPER_INTERVAL_MS: '100' });
    history = api.app.get(HistoryQueries);
    for (const q of ['ext', 'ext-fail', 'ext-fence', 'ext-stale', 'ext-abort', 'ext-pause', 'ext-delay', 'ext-replica', 'ext-release']) {
      expect((await api.http.put(`/queues/${q}`).send({ external: true })).status).toBe(200);
    }
  });
  afterAll(async () => {
    await api?.close();
  });

  /** The job's audit trail once every event of the stream is in Postgres. */
  async function settledEvents(id: string) {
    await waitUntil('audit caught up', async () => (await history.mirrorLag()).pending === 0, 15_000);
    return (await history.jobEvents(id)).items;
  }
  const enqueue = async (queue: string, extra: Record<string, unknown> = {}) => {
    const r = await api.http.post('/jobs').send({ type: 'ext.work', queue, payload: { n: 1 }, ...extra });
    expect(r.status).toBe(201);
    return r.body as { id: string; status: string };
  };
  /** The distinct field paths of a 400's details, sorted. */
  const paths = (body: { error: { details: { path: string }[] } }) => [...new Set(body.error.details.map((d) => d.path))].sort();
  const claim = (queue: string, body: Record<string, unknown>) => api.http.post(`/queues/${queue}/claim`).send({ workerId: 'ext-1', ...body });

  it('validates the claim body and the queue name', async () => {
    const bad = await api.http.post('/queues/ext/claim').send({ max: 0, waitMs: 30_001, leaseMs: 1, extra: true });
    expect(bad.status).toBe(400);
    expect(paths(bad.body)).toEqual(['extra', 'leaseMs', 'max', 'waitMs', 'workerId']);
    expect((await claim('ext', { max: 101 })).status).toBe(400);
    expect((await claim('Not_A_Queue', {})).status).toBe(400);
  });

  it('nothing to claim: waitMs 0 answers at once, waitMs N after about N ms, both with an empty list', async () => {
    const t0 = Date.now();
    const now = await claim('ext', {});
    expect(now.status).toBe(200);
    expect(now.body).toEqual({ jobs: [] });
    const t1 = Date.now();
    const later = await claim('ext', { waitMs: 600 });
    const took = Date.now() - t1;
    expect(later.body).toEqual({ jobs: [] });
    expect(took).toBeGreaterThanOrEqual(550);
    expect(took).toBeLessThan(5000);
    expect(t1 - t0).toBeLessThan(5000);
  });

  it('a worker loop: long poll woken by POST /jobs, heartbeat with progress and logs, complete', async () => {
    // .then(): supertest sends the request only once it is awaited.
    let answered = false;
    const pending = claim('ext', { waitMs: 20_000, leaseMs: 10_000 }).then((r) => ((answered = true), r));
    await sleep(1000);
    expect(answered).toBe(false);
    const t0 = Date.now();
    const job = await enqueue('ext', { payload: { to: 'x@y.z' } });
    const got = await pending;
    const elapsed = Date.now() - t0;
    expect(got.status).toBe(200);
    // Woken by the enqueue: not by the end of waitMs, nor by the 5 s safety re-claim.
    expect(elapsed).toBeLessThan(2500);
    expect(got.body.jobs).toHaveLength(1);
    const c = got.body.jobs[0];
    expect(c).toMatchObject({ id: job.id, queue: 'ext', type: 'ext.work', status: 'active', attempts: 1, workerId: 'ext-1', payload: { to: 'x@y.z' } });
    expect(typeof c.lockToken).toBe('string');
    expect(c.leaseExpiresAt).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);

    const hb = await api.http.post(`/jobs/${c.id}/heartbeat`).send({ lockToken: c.lockToken, progress: 50, logs: ['step 1', 'step 2'] });
    expect(hb.status).toBe(200);
    expect(hb.body).toEqual({ leaseExpiresAt: expect.any(String), cancelRequested: false });
    expect(Date.parse(hb.body.leaseExpiresAt)).toBeGreaterThanOrEqual(Date.parse(c.leaseExpiresAt));
    expect((await api.http.get(`/jobs/${c.id}`)).body).toMatchObject({ status: 'active', progress: 50 });
    const hb2 = await api.http.post(`/jobs/${c.id}/heartbeat`).send({ lockToken: c.lockToken, progress: { stage: 'upload', pct: 75 } });
    expect(hb2.status).toBe(200);

    const done = await api.http.post(`/jobs/${c.id}/complete`).send({ lockToken: c.lockToken, result: { ok: true } });
    expect(done.status).toBe(200);
    expect(done.body).toMatchObject({ id: c.id, status: 'completed', result: { ok: true }, attempts: 1, progress: { stage: 'upload', pct: 75 } });

    const events = (await settledEvents(c.id)).map((e) => e.event);
    expect(events).toEqual(['enqueued', 'claimed', 'progress', 'progress', 'completed']);
    const logs = (await history.jobLogs(c.id)).items;
    expect(logs.map((l) => [l.level, l.message, l.attempt])).toEqual([
      ['info', 'step 1', 1],
      ['info', 'step 2', 1],
    ]);
    const execs = (await history.jobExecutions(c.id)).items;
    expect(execs).toHaveLength(1);
    expect(execs[0]).toMatchObject({ outcome: 'completed', workerId: 'ext-1' });
  });

  it('fail with retryable false → failed, in the DLQ, lastError set, stack kept as an error log line', async () => {
    const job = await enqueue('ext-fail', { maxAttempts: 5 });
    const [c] = (await claim('ext-fail', {})).body.jobs;
    expect(c.id).toBe(job.id);
    const res = await api.http.post(`/jobs/${c.id}/fail`).send({ lockToken: c.lockToken, error: { message: 'card declined', stack: 'Error: card declined\n    at pay()' }, retryable: false });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ id: c.id, status: 'failed', attempts: 1, maxAttempts: 5, lastError: 'card declined' });
    expect((await settledEvents(c.id)).map((e) => e.event)).toEqual(['enqueued', 'claimed', 'failed']);
    const dlq = await history.listDlq({ queue: 'ext-fail' });
    expect(dlq.items.map((j) => j.id)).toEqual([c.id]);
    expect((await history.jobLogs(c.id)).items).toEqual([expect.objectContaining({ level: 'error', message: 'Error: card declined\n    at pay()' })]);
    expect((await api.http.get('/queues/ext-fail')).body.counts).toMatchObject({ failed: 1, active: 0 });
    // The attempt is over: the same token is refused now.
    expect((await api.http.post(`/jobs/${c.id}/complete`).send({ lockToken: c.lockToken })).status).toBe(409);
  });

  it('fail (retryable by default) with attempts left → delayed by the job backoff', async () => {
    const job = await enqueue('ext-fail', { maxAttempts: 3, backoff: { type: 'fixed', delayMs: 60_000, jitter: 'none' } });
    const [c] = (await claim('ext-fail', {})).body.jobs;
    expect(c.id).toBe(job.id);
    const before = Date.now();
    const res = await api.http.post(`/jobs/${c.id}/fail`).send({ lockToken: c.lockToken, error: { message: 'timeout upstream' } });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ status: 'delayed', attempts: 1, lastError: 'timeout upstream' });
    const runIn = Date.parse(res.body.runAt) - before;
    expect(runIn).toBeGreaterThan(55_000);
    expect(runIn).toBeLessThan(65_000);
    expect((await settledEvents(c.id)).map((e) => e.event)).toEqual(['enqueued', 'claimed', 'retry_scheduled']);
  });

  it('a wrong lock token → 409 lease_lost on heartbeat, complete and fail, and the job is unchanged', async () => {
    await enqueue('ext-fence');
    const [c] = (await claim('ext-fence', {})).body.jobs;
    const before = (await api.http.get(`/jobs/${c.id}`)).body;
    const eventsBefore = await settledEvents(c.id);
    const wrong = c.lockToken + 'x';
    const calls = [
      api.http.post(`/jobs/${c.id}/heartbeat`).send({ lockToken: wrong, progress: 99, logs: ['nope'] }),
      api.http.post(`/jobs/${c.id}/complete`).send({ lockToken: wrong, result: { stolen: true } }),
      api.http.post(`/jobs/${c.id}/fail`).send({ lockToken: wrong, error: { message: 'nope', stack: 'nope' }, retryable: false }),
    ];
    for (const res of await Promise.all(calls)) {
      expect(res.status).toBe(409);
      expect(res.body.error.code).toBe('lease_lost');
    }
    const after = (await api.http.get(`/jobs/${c.id}`)).body;
    expect(after).toMatchObject({ status: 'active', attempts: 1, progress: null, result: null, lastError: null });
    expect(after.updatedAt).toBe(before.updatedAt);
    expect(await settledEvents(c.id)).toEqual(eventsBefore);
    expect((await history.jobLogs(c.id)).items).toEqual([]);
    // The real holder is unaffected.
    expect((await api.http.post(`/jobs/${c.id}/complete`).send({ lockToken: c.lockToken })).status).toBe(200);
  });

  it('a stale lock token (lease expired, job reclaimed) → 409 and the new holder keeps the job', async () => {
    await enqueue('ext-stale', { maxAttempts: 3 });
    const [first] = (await claim('ext-stale', { leaseMs: 300 })).body.jobs;
    // The reaper (REAPER_INTERVAL_MS 100) puts it back once the lease expired.
    await waitUntil('lease expired and job requeued', async () => (await api.http.get(`/jobs/${first.id}`)).body.status === 'waiting', 15_000);
    const [second] = (await claim('ext-stale', { workerId: 'ext-2' })).body.jobs;
    expect(second).toMatchObject({ id: first.id, attempts: 2, workerId: 'ext-2' });
    const eventsBefore = await settledEvents(first.id);
    expect(eventsBefore.map((e) => e.event)).toEqual(['enqueued', 'claimed', 'stalled', 'claimed']);
    for (const res of [
      await api.http.post(`/jobs/${first.id}/heartbeat`).send({ lockToken: first.lockToken, progress: 10 }),
      await api.http.post(`/jobs/${first.id}/complete`).send({ lockToken: first.lockToken, result: 'late' }),
      await api.http.post(`/jobs/${first.id}/fail`).send({ lockToken: first.lockToken, error: { message: 'late' } }),
    ]) {
      expect(res.status).toBe(409);
      expect(res.body.error.code).toBe('lease_lost');
    }
    expect((await api.http.get(`/jobs/${first.id}`)).body).toMatchObject({ status: 'active', attempts: 2, workerId: 'ext-2', progress: null, result: null });
    expect(await settledEvents(first.id)).toEqual(eventsBefore);
    const done = await api.http.post(`/jobs/${first.id}/complete`).send({ lockToken: second.lockToken, result: 'fresh' });
    expect(done.body).toMatchObject({ status: 'completed', result: 'fresh' });
  });

  it('a heartbeat reports a cancel request; completing then ends the job cancelled', async () => {
    await enqueue('ext-fence');
    const [c] = (await claim('ext-fence', {})).body.jobs;
    expect((await api.http.delete(`/jobs/${c.id}`)).status).toBe(202);
    const hb = await api.http.post(`/jobs/${c.id}/heartbeat`).send({ lockToken: c.lockToken });
    expect(hb.status).toBe(200);
    expect(hb.body.cancelRequested).toBe(true);
    const done = await api.http.post(`/jobs/${c.id}/complete`).send({ lockToken: c.lockToken, result: 'ignored' });
    expect(done.status).toBe(200);
    expect(done.body.status).toBe('cancelled');
  });

  it('unknown job → 404; bad heartbeat, complete and fail bodies → 400; an oversized result → 413', async () => {
    const unknown = await api.http.post('/jobs/01a22977-706d-723e-926f-fd3ef1eef745/heartbeat').send({ lockToken: 't' });
    expect(unknown.status).toBe(404);
    expect((await api.http.post('/jobs/not-a-uuid/complete').send({ lockToken: 't' })).status).toBe(404);
    await enqueue('ext-fence');
    const [c] = (await claim('ext-fence', {})).body.jobs;
    const hb = await api.http.post(`/jobs/${c.id}/heartbeat`).send({ progress: 101, logs: 'x' });
    expect(hb.status).toBe(400);
    expect(paths(hb.body)).toEqual(['lockToken', 'logs', 'progress']);
    expect((await api.http.post(`/jobs/${c.id}/heartbeat`).send({ lockToken: c.lockToken, progress: [1] })).status).toBe(400);
    const fail = await api.http.post(`/jobs/${c.id}/fail`).send({ lockToken: c.lockToken, error: { stack: 's' }, retryable: 'no' });
    expect(fail.status).toBe(400);
    expect(paths(fail.body)).toEqual(['error.message', 'retryable']);
    const big = await api.http.post(`/jobs/${c.id}/complete`).send({ lockToken: c.lockToken, result: { d: 'x'.repeat(600_000) } });
    expect(big.status).toBe(413);
    expect((await api.http.get(`/jobs/${c.id}`)).body.status).toBe('active');
    expect((await api.http.post(`/jobs/${c.id}/complete`).send({ lockToken: c.lockToken })).status).toBe(200);
  });

  it('a long poll whose client disconnects stops waiting and claims nothing', async () => {
    const { port } = new URL(api.url);
    const req = httpRequest({ host: '127.0.0.1', port, method: 'POST', path: '/queues/ext-abort/claim', headers: { 'content-type': 'application/json' } });
    req.on('error', () => undefined);
    req.end(JSON.stringify({ workerId: 'gone', waitMs: 20_000 }));
    await sleep(400);
    req.destroy();
    await sleep(300);
    const job = await enqueue('ext-abort');
    await sleep(500);
    const got = await claim('ext-abort', { workerId: 'ext-live' });
    expect(got.body.jobs.map((j: { id: string; attempts: number; workerId: string }) => [j.id, j.attempts, j.workerId])).toEqual([[job.id, 1, 'ext-live']]);
    expect((await settledEvents(job.id)).map((e) => e.event)).toEqual(['enqueued', 'claimed']);
  });

  it('a long poll on a paused queue is woken by resume', async () => {
    expect((await api.http.post('/queues/ext-pause/pause')).status).toBe(200);
    const job = await enqueue('ext-pause');
    let answered = false;
    const pending = claim('ext-pause', { waitMs: 20_000 }).then((r) => ((answered = true), r));
    await sleep(1000);
    expect(answered).toBe(false);
    const t0 = Date.now();
    expect((await api.http.post('/queues/ext-pause/resume')).status).toBe(200);
    const got = await pending;
    expect(Date.now() - t0).toBeLessThan(2500);
    expect(got.body.jobs.map((j: { id: string }) => j.id)).toEqual([job.id]);
  });

  it('a long poll gets a delayed job once it is due', async () => {
    const job = await enqueue('ext-delay', { delayMs: 800 });
    const t0 = Date.now();
    const got = await claim('ext-delay', { waitMs: 20_000 });
    const took = Date.now() - t0;
    expect(got.body.jobs.map((j: { id: string }) => j.id)).toEqual([job.id]);
    expect(took).toBeGreaterThanOrEqual(500);
    expect(took).toBeLessThan(10_000);
  });

  describe('POST /jobs/:id/release (API.md v1.2)', () => {
    const release = (id: string, body: Record<string, unknown>) => api.http.post(`/jobs/${id}/release`).send(body);
    /** The job's row as the mirror wrote it (PostgreSQL only), once the audit stream is drained. */
    const mirrored = async (id: string) => {
      await settledEvents(id);
      const rows: { status: string; attempts: number; run_at: Date }[] = await history.db.query('SELECT status, attempts, run_at FROM jobs WHERE id = $1', [id]);
      return { status: rows[0].status, attempts: rows[0].attempts, runAt: rows[0].run_at.toISOString() };
    };

    it('→ 200 waiting with the attempt not counted; event released and execution outcome released, mirrored', async () => {
      const job = await enqueue('ext-release', { maxAttempts: 1 });
      const [c] = (await claim('ext-release', {})).body.jobs;
      expect(c).toMatchObject({ id: job.id, attempts: 1 });
      const res = await release(c.id, { lockToken: c.lockToken });
      expect(res.status).toBe(200);
      expect(res.body).toMatchObject({ id: job.id, status: 'waiting', attempts: 0, lastError: null });
      const events = await settledEvents(c.id);
      expect(events.map((e) => [e.event, e.from, e.to])).toEqual([
        ['enqueued', null, 'waiting'],
        ['claimed', 'waiting', 'active'],
        ['released', 'active', 'waiting'],
      ]);
      expect(events[2]).toMatchObject({ attempt: 1, workerId: 'ext-1', reason: 'worker' });
      expect((await api.http.get(`/jobs/${c.id}/events`)).body.items.map((e: { event: string }) => e.event)).toContain('released');
      const execs = await api.http.get(`/jobs/${c.id}/executions`);
      expect(execs.status).toBe(200);
      expect(execs.body.items).toEqual([expect.objectContaining({ attempt: 1, outcome: 'released' })]);
      expect(await mirrored(c.id)).toMatchObject({ status: 'waiting', attempts: 0 });
      // maxAttempts 1: the attempt was refunded, so the job still gets its one run.
      const [again] = (await claim('ext-release', { workerId: 'ext-2' })).body.jobs;
      expect(again).toMatchObject({ id: job.id, attempts: 1, workerId: 'ext-2' });
      expect((await api.http.post(`/jobs/${c.id}/complete`).send({ lockToken: again.lockToken })).body.status).toBe('completed');
    });

    it('with delayMs → 200 delayed until now + delayMs (mirrored), then claimable again', async () => {
      const job = await enqueue('ext-release');
      const [c] = (await claim('ext-release', {})).body.jobs;
      const before = Date.now();
      const res = await release(c.id, { lockToken: c.lockToken, delayMs: 60_000 });
      expect(res.status).toBe(200);
      expect(res.body).toMatchObject({ id: job.id, status: 'delayed', attempts: 0 });
      const runIn = Date.parse(res.body.runAt) - before;
      expect(runIn).toBeGreaterThan(55_000);
      expect(runIn).toBeLessThan(65_000);
      expect((await claim('ext-release', {})).body.jobs).toEqual([]);
      const row = await mirrored(c.id);
      expect(row).toMatchObject({ status: 'delayed', attempts: 0 });
      expect(row.runAt).toBe(res.body.runAt);
      expect((await settledEvents(c.id)).map((e) => [e.event, e.to])).toEqual([['enqueued', 'waiting'], ['claimed', 'active'], ['released', 'delayed']]);

      const short = await enqueue('ext-release');
      const [d] = (await claim('ext-release', {})).body.jobs;
      expect(d.id).toBe(short.id);
      expect((await release(d.id, { lockToken: d.lockToken, delayMs: 500 })).body.status).toBe('delayed');
      const t0 = Date.now();
      const got = await claim('ext-release', { waitMs: 10_000 });
      expect(got.body.jobs.map((j: { id: string }) => j.id)).toEqual([short.id]);
      expect(Date.now() - t0).toBeGreaterThanOrEqual(300);
      expect(got.body.jobs[0].attempts).toBe(1);
      await api.http.post(`/jobs/${short.id}/complete`).send({ lockToken: got.body.jobs[0].lockToken });
    });

    it('a wrong or stale lock token, or a job no longer held → 409 lease_lost and nothing changes', async () => {
      await enqueue('ext-release');
      const [c] = (await claim('ext-release', {})).body.jobs;
      const eventsBefore = await settledEvents(c.id);
      const wrong = await release(c.id, { lockToken: c.lockToken + 'x' });
      expect(wrong.status).toBe(409);
      expect(wrong.body.error.code).toBe('lease_lost');
      expect((await api.http.get(`/jobs/${c.id}`)).body).toMatchObject({ status: 'active', attempts: 1 });
      expect(await settledEvents(c.id)).toEqual(eventsBefore);
      // Released once: the same token again is stale.
      expect((await release(c.id, { lockToken: c.lockToken })).status).toBe(200);
      const again = await release(c.id, { lockToken: c.lockToken });
      expect(again.status).toBe(409);
      expect(again.body.error.code).toBe('lease_lost');
      // Reclaimed by another worker: the first token cannot release the new holder's job.
      const [second] = (await claim('ext-release', { workerId: 'ext-2' })).body.jobs;
      expect(second.id).toBe(c.id);
      expect((await release(c.id, { lockToken: c.lockToken })).status).toBe(409);
      expect((await api.http.get(`/jobs/${c.id}`)).body).toMatchObject({ status: 'active', workerId: 'ext-2' });
      // Completed: no longer held.
      expect((await api.http.post(`/jobs/${c.id}/complete`).send({ lockToken: second.lockToken })).status).toBe(200);
      expect((await release(c.id, { lockToken: second.lockToken })).status).toBe(409);
      expect((await api.http.get(`/jobs/${c.id}`)).body.status).toBe('completed');
    });

    it('unknown job → 404; bad bodies → 400', async () => {
      const unknown = await release('01a22977-706d-723e-926f-fd3ef1eef745', { lockToken: 't' });
      expect(unknown.status).toBe(404);
      expect(unknown.body.error.code).toBe('not_found');
      expect((await release('not-a-uuid', { lockToken: 't' })).status).toBe(404);
      await enqueue('ext-release');
      const [c] = (await claim('ext-release', {})).body.jobs;
      for (const [body, want] of [
        [{}, ['lockToken']],
        [{ lockToken: c.lockToken, delayMs: -1 }, ['delayMs']],
        [{ lockToken: c.lockToken, delayMs: 31_536_000_001 }, ['delayMs']],
        [{ lockToken: c.lockToken, delayMs: 1.5 }, ['delayMs']],
        [{ lockToken: c.lockToken, delayMs: '10' }, ['delayMs']],
        [{ lockToken: c.lockToken, extra: 1 }, ['extra']],
      ] as const) {
        const res = await release(c.id, body);
        expect([res.status, paths(res.body)]).toEqual([400, want]);
      }
      expect((await api.http.get(`/jobs/${c.id}`)).body.status).toBe('active');
      expect((await release(c.id, { lockToken: c.lockToken, delayMs: 31_536_000_000 })).body.status).toBe('delayed');
    });
  });

  it('claim on one API replica, heartbeat and complete on another', async () => {
    const other = await startTestApi('e2e-external-2', { ROLE: 'api', REDIS_PREFIX: api.prefix, DATABASE_URL: api.db.url });
    let closed = false;
    try {
      const job = await enqueue('ext-replica');
      const [c] = (await claim('ext-replica', { max: 10, leaseMs: 60_000 })).body.jobs;
      expect(c.id).toBe(job.id);
      const hb = await other.http.post(`/jobs/${c.id}/heartbeat`).send({ lockToken: c.lockToken, progress: 5, logs: ['from replica'] });
      expect(hb.status).toBe(200);
      // The other replica renews the claim's lease length (recorded on the job), not LOCK_TTL_MS (30 s).
      expect(Date.parse(hb.body.leaseExpiresAt) - Date.now()).toBeGreaterThan(45_000);
      expect((await other.http.post(`/jobs/${c.id}/complete`).send({ lockToken: c.lockToken + 'x' })).status).toBe(409);
      const done = await other.http.post(`/jobs/${c.id}/complete`).send({ lockToken: c.lockToken, result: 1 });
      expect(done.body).toMatchObject({ status: 'completed', result: 1 });
      const progress = (await settledEvents(c.id)).find((e) => e.event === 'progress');
      expect(progress).toMatchObject({ workerId: 'ext-1' });
      // Shutting a replica down answers its waiting long polls at once (empty), not after waitMs.
      let answered: { status: number; body: unknown } | null = null;
      const poll = other.http.post('/queues/ext-replica/claim').send({ workerId: 'w-closing', waitMs: 20_000 }).then((r) => (answered = r));
      await sleep(500);
      expect(answered).toBeNull();
      const t0 = Date.now();
      closed = true;
      await other.app.close();
      await poll;
      expect(Date.now() - t0).toBeLessThan(5000);
      expect(answered).toMatchObject({ status: 200, body: { jobs: [] } });
    } finally {
      if (!closed) await other.app.close();
      await other.db.close();
    }
  });
});

/**
 * API.md v1.3: a lease ends at its `leaseExpiresAt` (Redis time), whether or
 * not the reaper has passed. The reaper is configured but far off
 * (REAPER_INTERVAL_MS 10 min), as between two passes of a real one: a claim
 * with leaseMs 100, 600 ms of waiting, and every call with its token answers
 * 409 lease_lost. Before, release answered 200 and refunded the attempt, so a
 * maxAttempts 1 job ran again instead of being dead-lettered.
 */
describe('external worker protocol: an ended lease, before the reaper (e2e)', () => {
  let api: TestApi;
  let history: HistoryQueries;

  beforeAll(async () => {
    api = await startTestApi('e2e-external-expiry', { ROLE: 'api,audit,scheduler', REAPER_INTERVAL_MS: '600000' });
    history = api.app.get(HistoryQueries);
    expect((await api.http.put('/queues/ext-expiry').send({ external: true })).status).toBe(200);
  });
  afterAll(async () => {
    await api?.close();
  });

  it('heartbeat, release, complete and fail answer 409 lease_lost; the reaper then dead-letters the job as stalled, not run again', async () => {
    const job = (await api.http.post('/jobs').send({ type: 'ext.work', queue: 'ext-expiry', maxAttempts: 1 })).body as { id: string };
    const [c] = (await api.http.post('/queues/ext-expiry/claim').send({ workerId: 'ext-1', leaseMs: 100 })).body.jobs;
    expect(c).toMatchObject({ id: job.id, attempts: 1 });
    await sleep(600);
    for (const [path, body] of [
      ['heartbeat', { lockToken: c.lockToken }],
      ['release', { lockToken: c.lockToken }],
      ['complete', { lockToken: c.lockToken, result: 'late' }],
      ['fail', { lockToken: c.lockToken, error: { message: 'late' } }],
    ] as const) {
      const r = await api.http.post(`/jobs/${c.id}/${path}`).send(body);
      expect({ path, status: r.status, code: r.body.error?.code }).toEqual({ path, status: 409, code: 'lease_lost' });
    }
    // Still active (nobody moved it), its attempt counted; nothing to claim: it is not back in waiting.
    expect((await api.http.get(`/jobs/${c.id}`)).body).toMatchObject({ status: 'active', attempts: 1 });
    expect((await api.http.post('/queues/ext-expiry/claim').send({ workerId: 'ext-2' })).body.jobs).toEqual([]);

    // The reaper's pass (the function the scheduler role runs every REAPER_INTERVAL_MS).
    expect(await reapExpiredLeases({ jobs: api.app.get(JobStore), queues: api.app.get(QueueStore) })).toBe(1);
    expect((await api.http.get(`/jobs/${c.id}`)).body).toMatchObject({ status: 'failed', attempts: 1 });
    await waitUntil('audit caught up', async () => (await history.mirrorLag()).pending === 0, 15_000);
    const events = (await history.jobEvents(c.id)).items;
    expect(events.map((e) => [e.event, e.from, e.to, e.reason])).toEqual([
      ['enqueued', null, 'waiting', null],
      ['claimed', 'waiting', 'active', null],
      ['stalled', 'active', 'active', 'lease_expired'],
      ['failed', 'active', 'failed', 'lease_expired'],
    ]);
    expect((await api.http.post('/queues/ext-expiry/claim').send({ workerId: 'ext-2' })).body.jobs).toEqual([]);
  });
});
