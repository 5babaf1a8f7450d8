/**
 * C31 (CASES.md): idempotency keys hold on every path.
 *
 * One app (ROLE=api,audit,scheduler: the history mirror runs, so a finished
 * job leaves Redis once mirrored) with IDEMPOTENCY_TTL_MS 60 s, external
 * queues worked over HTTP. Checks: a batch with the same key twice (same
 * body) makes one job and answers both items with it; with different bodies
 * the batch is refused with 409 and nothing is written; a key re-used after
 * its job completed and left Redis still returns that job (within the TTL);
 * a replayed answer shows the job's current state, not the state at first
 * submission, on POST /jobs and POST /jobs/batch.
 */
import { startExternalQueueApi, type TestApi } from '../../support/http';
import type { RedisClient } from '../../../src/redis/connection';
import type { RedisStores } from '../../../src/redis/stores';
import { waitUntil } from '../../support/cases';

const Q = 'c31';
const IDEM_TTL_MS = 60_000;

let api: TestApi;
let redis: RedisClient;
let stores: RedisStores;

beforeAll(async () => {
  ({ api, stores, redis } = await startExternalQueueApi('c31', Q, { ROLE: 'api,audit,scheduler', IDEMPOTENCY_TTL_MS: String(IDEM_TTL_MS) }));
});
afterAll(() => api?.close());

const body = (key: string, payload: Record<string, unknown>) => ({ type: 'ext.work', queue: Q, payload, idempotencyKey: key });
/** What "nothing written" compares: the queue's counts, its idempotency keys, its jobs in PostgreSQL. */
async function snapshot() {
  const idem = (await redis.keys(`${stores.ctx.keys(Q).base}idem:*`)).sort();
  const counts = (await api.http.get(`/queues/${Q}`)).body.counts;
  const jobs = (await api.http.get('/jobs').query({ queue: Q, limit: 100 })).body.items.map((j: { id: string }) => j.id);
  return { idem, counts, jobs };
}
/** The job's audit trail as mirrored (GET /jobs/:id/events waits for the mirror). */
const trail = async (id: string) => ((await api.http.get(`/jobs/${id}/events`)).body.items as { event: string }[]).map((e) => e.event);
async function claimOne() {
  const r = await api.http.post(`/queues/${Q}/claim`).send({ workerId: 'c31' });
  expect(r.status).toBe(200);
  expect(r.body.jobs).toHaveLength(1);
  return r.body.jobs[0] as { id: string; lockToken: string };
}

test('C31 a batch with the same key twice (same body) makes one job and answers both items with it', async () => {
  const before = (await api.http.get(`/queues/${Q}`)).body.counts.waiting;
  const r = await api.http.post('/jobs/batch').send({ jobs: [body('dup', { n: 1 }), body('other', { n: 2 }), body('dup', { n: 1 })] });
  expect(r.status).toBe(201);
  const [a, other, b] = r.body.jobs;
  expect(a.id).toBe(b.id);
  expect(other.id).not.toBe(a.id);
  expect(a).toMatchObject({ status: 'waiting', idempotencyKey: 'dup', payload: { n: 1 } });
  expect(b).toMatchObject({ status: 'waiting', idempotencyKey: 'dup', payload: { n: 1 } });
  expect((await api.http.get(`/queues/${Q}`)).body.counts.waiting).toBe(before + 2);
  // The events read waits up to 2 s for the mirror; a loaded machine may need longer.
  await waitUntil('the enqueued event mirrored', async () => (await trail(a.id)).length > 0, 20_000, 50);
  expect(await trail(a.id)).toEqual(['enqueued']);

  // Clean up for the next tests: run both.
  for (let i = 0; i < 2; i++) {
    const c = await claimOne();
    expect((await api.http.post(`/jobs/${c.id}/complete`).send({ lockToken: c.lockToken })).status).toBe(200);
  }
});

test('C31 the same key with different bodies in one batch → 409 and nothing written', async () => {
  const before = await snapshot();
  const r = await api.http.post('/jobs/batch').send({ jobs: [body('fresh', { n: 0 }), body('clash', { n: 1 }), body('clash', { n: 2 })] });
  expect(r.status).toBe(409);
  expect(r.body.error.code).toBe('conflict');
  expect(await snapshot()).toEqual(before);
  expect(before.idem.filter((k) => /idem:(fresh|clash)$/.test(k))).toEqual([]);
  // Neither key was taken: both can be used afresh.
  const again = await api.http.post('/jobs/batch').send({ jobs: [body('clash', { n: 2 }), body('fresh', { n: 0 })] });
  expect(again.status).toBe(201);
  expect(again.body.jobs.map((j: { payload: unknown }) => j.payload)).toEqual([{ n: 2 }, { n: 0 }]);
  for (let i = 0; i < 2; i++) {
    const c = await claimOne();
    expect((await api.http.post(`/jobs/${c.id}/complete`).send({ lockToken: c.lockToken })).status).toBe(200);
  }
});

test('C31 a replay shows the current state; after the job completed and left Redis the key still returns it', async () => {
  const first = await api.http.post('/jobs').send(body('life', { step: 1 }));
  expect(first.status).toBe(201);
  const id = first.body.id as string;
  expect(first.body.status).toBe('waiting');

  // Active now: the replay says so, on both paths.
  const c = await claimOne();
  expect(c.id).toBe(id);
  const replayActive = await api.http.post('/jobs').send(body('life', { step: 1 }));
  expect(replayActive.status).toBe(200);
  expect(replayActive.headers['idempotent-replayed']).toBe('true');
  expect(replayActive.body).toMatchObject({ id, status: 'active', attempts: 1 });
  const batchActive = await api.http.post('/jobs/batch').send({ jobs: [body('life', { step: 1 })] });
  expect(batchActive.status).toBe(201);
  expect(batchActive.body.jobs[0]).toMatchObject({ id, status: 'active' });

  const done = await api.http.post(`/jobs/${id}/complete`).send({ lockToken: c.lockToken, result: { ok: 1 } });
  expect(done.status).toBe(200);

  // The mirror commits its events, then Redis forgets the job hash.
  const jobKey = stores.ctx.keys(Q).base + 'job:' + id;
  await waitUntil('the job left Redis', async () => (await redis.exists(jobKey)) === 0, 20_000);
  expect(await stores.jobs.getJob(Q, id)).toBeNull();

  const replayDone = await api.http.post('/jobs').send(body('life', { step: 1 }));
  expect(replayDone.status).toBe(200);
  expect(replayDone.headers['idempotent-replayed']).toBe('true');
  expect(replayDone.body).toMatchObject({ id, status: 'completed', result: { ok: 1 }, idempotencyKey: 'life' });
  const batchDone = await api.http.post('/jobs/batch').send({ jobs: [body('life', { step: 1 }), body('life', { step: 1 })] });
  expect(batchDone.status).toBe(201);
  expect(batchDone.body.jobs).toEqual([
    expect.objectContaining({ id, status: 'completed' }),
    expect.objectContaining({ id, status: 'completed' }),
  ]);
  // The key still guards its body: another body is refused, and no job was made.
  const clash = await api.http.post('/jobs').send(body('life', { step: 2 }));
  expect(clash.status).toBe(409);
  expect(await trail(id)).toEqual(['enqueued', 'claimed', 'completed']);
  expect((await api.http.get(`/queues/${Q}`)).body.counts).toMatchObject({ waiting: 0, active: 0 });
}, 40_000);
