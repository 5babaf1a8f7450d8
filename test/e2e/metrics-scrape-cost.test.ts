import type Redis from 'ioredis';
import { normalizeEnqueue } from '../../src/core/job-options';
import { TOP_KEYS_MAX_AGE_MS } from '../../src/metrics/queue-metrics';
import { createRedis } from '../../src/redis/connection';
import { createRedisStores } from '../../src/redis/stores';
import { startRedisServer, RedisServer } from '../support/redis-server';
import { startTestApi, TestApi } from '../support/http';

/**
 * What one GET /metrics scrape costs Redis for the queue series
 * (src/metrics/queue-metrics.ts, src/redis/waiting-age.ts), counted with
 * INFO commandstats on a private redis-server: the same commands for 10
 * waiting jobs as for 20,000, i.e. nothing grows with the backlog
 * (docs/autoscaling.md relies on it). The top-keys read of each queue
 * (lua/topKeys-1.lua, one EVALSHA) is counted too: for a queue without
 * keys a few reads of empty keys; for a queue with keys at most one read
 * per TOP_KEYS_MAX_AGE_MS, however often it is scraped.
 */
const QUEUE_COMMANDS = ['smembers', 'time', 'zcard', 'zrangebyscore', 'hmget', 'evalsha', 'zrange', 'srandmember', 'hscan'];

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

  /**
   * The least calls per command over three scrapes: another periodic read of
   * the api process can land in one
   * scrape's window on a loaded machine (seen once in a full run: one more SMEMBERS
   * and TIME); what a scrape itself costs is the floor.
   */
  async function steadyCost(): Promise<Record<string, number>> {
    const runs = [await scrapeCost(), await scrapeCost(), await scrapeCost()];
    return Object.fromEntries(QUEUE_COMMANDS.map((c) => [c, Math.min(...runs.map((r) => r[c]))]));
  }

  const fill = async (n: number) => {
    const priorities = ['high', 'normal', 'low'];
    for (let done = 0; done < n; done += 1000) {
      const jobs = Array.from({ length: Math.min(1000, n - done) }, (_, i) => ({ queue: 'cost', type: 'diag.echo', payload: { i }, priority: priorities[(done + i) % 3] }));
      expect((await api.http.post('/jobs/batch').send({ jobs })).status).toBe(201);
    }
  };

  it('10 and 20,000 waiting jobs over 3 priorities: the same commands, 4 ZCARD + (bands + 1) ZRANGEBYSCORE + bands HMGET per queue, and one top-keys read', async () => {
    await fill(10);
    await api.http.get('/metrics'); // the first scrape loads the top-keys script (EVAL, then EVALSHA)
    const small = await steadyCost();
    await fill(19_990);
    const depth = /^sluice_queue_jobs\{project="default",queue="cost",state="waiting"\} 20000$/m;
    expect((await api.http.get('/metrics')).text).toMatch(depth);
    const large = await steadyCost();
    expect(large).toEqual(small);
    // The top-keys script of a queue without keys: its settings (HMGET), the
    // counts index's head (ZRANGE), overrides (HSCAN).
    expect(large).toMatchObject({ smembers: 1, time: 1, zcard: 4, zrangebyscore: 4, hmget: 3 + 1, evalsha: 1, zrange: 1, hscan: 1 });
  }, 120_000);

  it('a queue with 2,000 concurrency keys: its top keys are read once, then not again within TOP_KEYS_MAX_AGE_MS', async () => {
    // (Keyed jobs through the store: POST /jobs does not take concurrencyKey yet.)
    const client = createRedis({ redisUrl: redis.url, redisClusterNodes: null });
    try {
      const stores = createRedisStores(client, api.prefix);
      const job = (i: number) => ({ ...normalizeEnqueue({ queue: 'keyed', type: 'diag.echo', payload: { i } }, 1e6), concurrencyKey: `k${i % 2000}` });
      for (let i = 0; i < 4000; i += 1000) await stores.jobs.enqueue(Array.from({ length: 1000 }, (_, j) => job(i + j)));
    } finally {
      client.disconnect();
    }
    const first = await scrapeCost();
    expect((await api.http.get('/metrics')).text).toMatch(/^sluice_queue_key_jobs\{project="default",queue="keyed",key="k0",state="waiting"\} 2$/m);
    const again = await scrapeCost();
    // Two queues: the first scrape read both; the second only the one without keys.
    expect(first.evalsha).toBe(2);
    expect(again.evalsha).toBe(1);
    // The counts index's head, then (turns mode: no lanes, lua/includes/lanes.lua)
    // the active set once for the active jobs per key (none here): nothing per key (2,000).
    expect(first.zrange - again.zrange).toBe(2);
    expect(first.zcard - again.zcard).toBe(0);
    expect((first.hget ?? 0) - (again.hget ?? 0)).toBe(0);
    expect(TOP_KEYS_MAX_AGE_MS).toBeGreaterThan(1000);
  }, 120_000);
});
