import type Redis from 'ioredis';
import { createRedis } from '../../src/redis/connection';
import { jobKey } from '../../src/redis/keys';
import { startTestApi, TestApi } from '../support/http';
import { privatePostgres, PrivatePostgres } from '../support/private-postgres';
import { REDIS_URL } from '../support/redis';
import { waitUntil } from '../support/timing';

/**
 * API.md: "A job whose hash is still in Redis is answered from Redis even
 * while PostgreSQL is down: reading a live job never depends on PostgreSQL."
 * The app's database lives on a private PostgreSQL that the test stops: a
 * job still in Redis (delayed, and one mirrored to PostgreSQL before the
 * outage) is answered 200; a job only in PostgreSQL (finished, pruned from
 * Redis) is 503; an unknown id is 503 too (PostgreSQL might know it).
 */
describe('GET /jobs/:id of a live job while PostgreSQL is down (e2e)', () => {
  let pg: PrivatePostgres;
  let api: TestApi;
  let redis: Redis;
  beforeAll(async () => {
    pg = await privatePostgres('live-job');
    await pg.start();
    api = await startTestApi('e2e-live-job', { DATABASE_URL: pg.url('sluice_live_job'), ROLE: 'all', AUDIT_THREAD: 'false', WORKER_CONCURRENCY: '2' });
    redis = createRedis({ redisUrl: REDIS_URL, redisClusterNodes: null }) as Redis;
  }, 120_000);
  afterAll(async () => {
    redis?.disconnect();
    await api?.close();
    await pg?.destroy();
  });

  it('live job → 200 from Redis; a job only in PostgreSQL → 503', async () => {
    // Finished, mirrored, then pruned from Redis: only PostgreSQL has it.
    const done = (await api.http.post('/jobs').send({ type: 'diag.echo', queue: 'done-q', payload: { n: 1 } })).body;
    await waitUntil('pruned from Redis', async () => (await redis.exists(jobKey(api.prefix, 'done-q', done.id))) === 0, 30_000, 50);
    expect((await api.http.get(`/jobs/${done.id}`)).body.status).toBe('completed');
    // Live for an hour; its row is mirrored before the outage (the PostgreSQL-first read path).
    const live = (await api.http.post('/jobs').send({ type: 'diag.echo', queue: 'live-q', payload: { n: 2 }, delayMs: 3_600_000 })).body;
    const liveRes = await api.http.get(`/jobs/${live.id}`);
    expect(liveRes.body).toMatchObject({ id: live.id, status: 'delayed' });
    await waitUntil('live job mirrored', async () => (await api.http.get(`/jobs?queue=live-q`)).body.items?.length === 1, 30_000, 100);

    await pg.stop('immediate');
    const again = await api.http.get(`/jobs/${live.id}`);
    expect(again.status).toBe(200);
    expect(again.body).toEqual(liveRes.body);
    // Enqueued during the outage: never in PostgreSQL, answered all the same.
    const fresh = await api.http.post('/jobs').send({ type: 'diag.echo', queue: 'live-q', delayMs: 3_600_000 });
    expect(fresh.status).toBe(201);
    expect((await api.http.get(`/jobs/${fresh.body.id}`)).status).toBe(200);

    const gone = await api.http.get(`/jobs/${done.id}`);
    expect(gone.status).toBe(503);
    expect(gone.body.error.code).toBe('unavailable');
    expect((await api.http.get('/jobs/01890a5d-ac96-774b-b2d8-3d5bbd4a1a5e')).status).toBe(503);
  }, 120_000);
});
