import { startTestApi, TestApi } from '../support/http';
import { privateRedis, PrivateRedis, waitUntil } from '../support/timing';

describe('503 unavailable (e2e)', () => {
  describe('Redis down', () => {
    let redis: PrivateRedis;
    let api: TestApi;
    let redisUp = false;
    beforeAll(async () => {
      redis = await privateRedis();
      await redis.start();
      redisUp = true;
      api = await startTestApi('e2e-redis-down', { REDIS_URL: redis.url });
    });
    afterAll(async () => {
      // start() spawns a new server: only when the test left it down.
      if (!redisUp) await redis.start().catch(() => undefined);
      await api?.close();
      await redis?.destroy();
    });

    it('answers 503 at once while Redis is down, and serves again once it is back', async () => {
      expect((await api.http.post('/jobs').send({ type: 'diag.echo' })).status).toBe(201);
      await redis.kill();
      redisUp = false;
      const t0 = Date.now();
      const res = await waitUntil('a 503', async () => {
        const r = await api.http.post('/jobs').send({ type: 'diag.echo' });
        return r.status === 503 ? r : undefined;
      }, 10000, 50);
      expect(Date.now() - t0).toBeLessThan(10000);
      expect(res.body.error.code).toBe('unavailable');
      expect(res.body.error.message).toMatch(/Redis/);
      expect((await api.http.get('/healthz')).status).toBe(200);
      await redis.start();
      redisUp = true;
      await waitUntil('201 again', async () => (await api.http.post('/jobs').send({ type: 'diag.echo' })).status === 201 || undefined, 20000, 100);
    });
  });

  describe('audit backlog over AUDIT_MAX_BACKLOG', () => {
    let api: TestApi;
    beforeAll(async () => {
      // No audit role: nothing drains the events, so the backlog only grows.
      api = await startTestApi('e2e-backlog', { ROLE: 'api', AUDIT_MAX_BACKLOG: '3' });
    });
    afterAll(async () => {
      await api?.close();
    });

    it('sheds enqueue load with 503 and writes nothing', async () => {
      for (let i = 0; i < 4; i++) expect((await api.http.post('/jobs').send({ type: 'diag.echo', queue: 'shed' })).status).toBe(201);
      const res = await waitUntil('a 503', async () => {
        const r = await api.http.post('/jobs').send({ type: 'diag.echo', queue: 'shed', idempotencyKey: 'probe' });
        return r.status === 503 ? r : undefined;
      }, 10000, 100);
      expect(res.body.error.code).toBe('unavailable');
      expect(res.body.error.message).toMatch(/backlog/i);
      // Reads are still served.
      expect((await api.http.get('/healthz')).status).toBe(200);
    });
  });
});
