import { HandlerMap } from '../../../src/core/handler';
import { normalizeEnqueue } from '../../../src/core/job-options';
import { createRedis } from '../../../src/redis/connection';
import { RedisWakeWaiter } from '../../../src/redis/wake/wake-waiter';
import { WorkerRuntime } from '../../../src/workers/runtime/worker-runtime';
import { openStore, REDIS_URL, TestStore } from '../../support/redis';
import { waitUntil } from '../../support/timing';

/**
 * A queue's maxConcurrency holds across workers, and a worker that finds the
 * limit reached resumes as soon as slots free up. Claims are written to Redis
 * at once while acks ride the auto-pipeline (src/redis/connection.ts), so a
 * claim can see a slot still taken by a job whose ack left in the same turn:
 * the ack's wake-up must make the worker claim again, never stall it.
 */
describe('worker runtime: maxConcurrency across workers', () => {
  let t: TestStore;
  const runtimes: WorkerRuntime[] = [];
  beforeAll(async () => {
    t = await openStore('max-conc');
  });
  afterAll(async () => {
    await Promise.all(runtimes.map((r) => r.stop()));
    await t.close();
  });

  it('never runs more than maxConcurrency jobs at once over two workers, and finishes them all', async () => {
    const q = 'mc-two-workers';
    await t.stores.queues.configure(q, { maxConcurrency: 2 });
    let running = 0;
    let peak = 0;
    let done = 0;
    const handlers = new HandlerMap();
    handlers.register('short', async () => {
      peak = Math.max(peak, ++running);
      await new Promise((r) => setTimeout(r, 5));
      running--;
      done++;
      return null;
    });
    for (const id of ['a', 'b']) {
      const waiter = new RedisWakeWaiter(
        () => createRedis({ redisUrl: REDIS_URL, redisClusterNodes: null }, { blocking: true }),
        false,
        (q) => t.keys(q).wake,
      );
      const rt = new WorkerRuntime(t.stores, handlers, waiter, {
        workerId: `w-${id}`,
        queues: [q],
        concurrency: 5,
        leaseMs: 30_000,
        heartbeatIntervalMs: 10_000,
        shutdownGraceMs: 1000,
      });
      runtimes.push(rt);
      rt.start();
    }
    const n = 300;
    await t.store.enqueue(
      Array.from({ length: n }, (_, i) =>
        normalizeEnqueue({ queue: q, type: 'short', payload: { i } }, 1e6),
      ),
    );
    const started = Date.now();
    // 300 jobs of 5 ms, two at a time: ~0.75 s of handler time; a stall would end at the 5 s safety-net poll.
    await waitUntil('all jobs done', async () => done === n || undefined, 30_000);
    expect(peak).toBe(2);
    expect(Date.now() - started).toBeLessThan(15_000);
    // The last acks ride the auto-pipeline after their handlers returned: applied within moments.
    await waitUntil('the last acks applied', async () => (await t.redis.zcard(t.keys(q).active)) === 0 || undefined, 5_000);
    expect(await t.redis.zcard(t.keys(q).active)).toBe(0);
  });
});
