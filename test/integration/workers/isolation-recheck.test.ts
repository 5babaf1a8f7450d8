import { HandlerMap } from '../../../src/core/handler';
import { normalizeEnqueue } from '../../../src/core/job-options';
import { createRedis } from '../../../src/redis/connection';
import { RedisWakeWaiter } from '../../../src/redis/wake/wake-waiter';
import { WorkerRuntime } from '../../../src/workers/runtime/worker-runtime';
import { openStore, REDIS_URL, TestStore } from '../../support/redis';
import { sleepMs as sleep } from '../../support/redis-server';
import { waitUntil } from '../../support/timing';

/**
 * A busy worker that meets a job which must run alone (its lease expired once)
 * drains to take it. If another worker takes that job meanwhile, the first
 * must not stay drained until all its own jobs end: it claims again.
 */
describe('worker runtime: draining for an isolated job', () => {
  let t: TestStore;
  let rt: WorkerRuntime | undefined;
  let release: () => void = () => undefined;
  beforeAll(async () => {
    t = await openStore('iso-recheck');
  });
  afterAll(async () => {
    release();
    await rt?.stop();
    await t.close();
  });

  it('claims other work again once the isolated job went to another worker', async () => {
    const enq = (queue: string, type: string) => t.store.enqueue([normalizeEnqueue({ queue, type, payload: {} }, 1e6)]);
    const handlers = new HandlerMap();
    const longDone = new Promise<void>((r) => (release = r));
    const quickDone: string[] = [];
    handlers.register('long', async () => {
      await longDone;
      return null;
    });
    handlers.register('quick', async (_p, ctx) => {
      quickDone.push(ctx.jobId);
      return null;
    });
    const waiter = new RedisWakeWaiter(() => createRedis({ redisUrl: REDIS_URL, redisClusterNodes: null }, { blocking: true }), false, (q) => t.keys(q).wake);
    rt = new WorkerRuntime(t.stores, handlers, waiter, {
      workerId: 'w-busy', queues: ['iso', 'other'], concurrency: 4, leaseMs: 30_000, heartbeatIntervalMs: 10_000, shutdownGraceMs: 1000, maxIdleWaitMs: 200,
    });
    rt.start();
    // The worker is busy with a long job.
    await enq('other', 'long');
    await waitUntil('long job running', async () => (await t.redis.zcard(t.keys('other').active)) === 1 || undefined);
    // A job of `iso` stalls once (claimed by a worker that vanished): it must now run alone.
    // (`iso` is external meanwhile, so the busy worker cannot take it first.)
    await t.stores.queues.configure('iso', { external: true });
    const [{ id: isoId }] = await enq('iso', 'quick');
    const gone = await t.store.claim('iso', 1, 50, 'w-gone', true);
    expect(gone.jobs.map((j) => j.id)).toEqual([isoId]);
    await sleep(100);
    expect((await t.store.reapExpired('iso', 10)).reaped).toBe(1);
    await t.stores.queues.configure('iso', { external: false });
    // The busy worker sees it at the head of `iso` and drains...
    await sleep(300);
    // ...and an idle worker elsewhere takes it.
    const taken = await t.store.claimForWorker('iso', 1, 30_000, 'w-idle', true);
    expect(taken.jobs.map((j) => j.id)).toEqual([isoId]);
    // New work must now run on the busy worker, while its long job still runs.
    const quick = await Promise.all([enq('other', 'quick'), enq('other', 'quick'), enq('other', 'quick')]);
    await waitUntil('the 3 quick jobs ran', async () => quick.every(([r]) => quickDone.includes(r.id)) || undefined, 5000, 20);
    expect(await t.redis.zcard(t.keys('other').active)).toBe(1); // the long job, still running
  });
});
