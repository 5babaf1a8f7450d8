import type Redis from 'ioredis';
import { startRedisServer, RedisServer } from '../support/redis-server';
import { startTestApi, TestApi } from '../support/http';

/**
 * What one GET /metrics scrape costs Redis for the queue series
 * (src/metrics/queue-metrics.ts, src/redis/waiting-age.ts), counted with
 * INFO commandstats on a private redis-server: the same commands for 10
 * waiting jobs as for 20,000, i.e. nothing grows with the backlog
 * (docs/autoscaling.md relies on it).
 */
const QUEUE_COMMANDS = ['smembers', 'time', 'zcard', 'zrangebyscore', 'hmget'];

describe('GET /metrics: Redis commands per scrape do not grow with the backlog', () => {
  let redis: RedisServer;
  let api: TestApi;
  let admin: Redis;

  beforeAll(async () => {
    redis = await startRedisServer({ name: 'scrape-cost' });
    api = await startTestApi('e2e-scrape-cost', { REDIS_URL: redis.url, ROLE: 'api' });
    admin = redis.client();
  });
  afterAll(async () => {
    admin?.disconnect();
    await api?.close();
    await redis?.stop();
  });

  /** Calls per command of QUEUE_COMMANDS during one scrape. */
  async function scrapeCost(): Promise<Record<string, number>> {
    await admin.config('RESETSTAT');
    const res = await api.http.get('/metrics');
    expect(res.status).toBe(200);
    expect(res.text).toMatch(/^sluice_queue_depth_scrape_success 1$/m);
    const stats = String(await admin.info('commandstats'));
    const calls: Record<string, number> = {};
    for (const c of QUEUE_COMMANDS) calls[c] = Number(new RegExp(`^cmdstat_${c}:calls=(\\d+)`, 'm').exec(stats)?.[1] ?? 0);
    return calls;
  }

  const fill = async (n: number) => {
    const priorities = ['high', 'normal', 'low'];
    for (let done = 0; done < n; done += 1000) {
      const jobs = Array.from({ length: Math.min(1000, n - done) }, (_, i) => ({ queue: 'cost', type: 'diag.echo', payload: { i }, priority: priorities[(done + i) % 3] }));
      expect((await api.http.post('/jobs/batch').send({ jobs })).status).toBe(201);
    }
  };

  it('10 and 20,000 waiting jobs over 3 priorities: the same commands, 4 ZCARD + (bands + 1) ZRANGEBYSCORE + bands HMGET per queue', async () => {
    await fill(10);
    const small = await scrapeCost();
    await fill(19_990);
    const depth = /^sluice_queue_jobs\{project="default",queue="cost",state="waiting"\} 20000$/m;
    expect((await api.http.get('/metrics')).text).toMatch(depth);
    const large = await scrapeCost();
    expect(large).toEqual(small);
    expect(large).toMatchObject({ smembers: 1, time: 1, zcard: 4, zrangebyscore: 4, hmget: 3 });
  }, 120_000);
});
