import { HandlerMap } from '../../../src/core/handler';
import { normalizeEnqueue } from '../../../src/core/job-options';
import type { JobStore } from '../../../src/core/ports';
import { createRedis } from '../../../src/redis/connection';
import { RedisWakeWaiter } from '../../../src/redis/wake/wake-waiter';
import { WorkerRuntime } from '../../../src/workers/runtime/worker-runtime';
import { openStore, readEvents, REDIS_URL, TestStore } from '../../support/redis';
import { waitUntil } from '../../support/timing';

/**
 * A claim that does not answer (on a Redis Cluster: its queue's shard lost
 * its master and the replica has not taken over yet) must not hold up the
 * worker's other queues: after CLAIM_STALL_MS (500 ms) the loop goes on without
 * it, and the jobs of its late answer start then, or are given back
 * (released, attempt refunded) when the worker has no free slot left.
 */
describe('worker runtime: a claim that hangs on one queue', () => {
  let t: TestStore;
  let rt: WorkerRuntime | undefined;
  const cleanups: (() => void)[] = [];
  beforeAll(async () => {
    t = await openStore('claim-stall');
  });
  afterEach(async () => {
    cleanups.splice(0).forEach((f) => f());
    await rt?.stop();
    rt = undefined;
  });
  afterAll(async () => {
    await t.close();
  });

  /** The job store, with claims on `stuck` held until `open()`. */
  function stallingStore(stuck: string) {
    let open!: () => void;
    const gate = new Promise<void>((r) => (open = r));
    let held = 0;
    const jobs = new Proxy(t.store, {
      get(target, prop, receiver) {
        if (prop === 'claimForWorker')
          return async (queue: string, ...rest: [number, number, string, boolean?]) => {
            if (queue === stuck) {
              held++;
              await gate;
            }
            return target.claimForWorker(queue, ...rest);
          };
        const v = Reflect.get(target, prop, receiver);
        return typeof v === 'function' ? v.bind(target) : v;
      },
    }) as JobStore;
    cleanups.push(() => open());
    return { jobs, open: () => open(), held: () => held };
  }

  function runtime(jobs: JobStore, handlers: HandlerMap, queues: string[], concurrency: number): WorkerRuntime {
    const waiter = new RedisWakeWaiter(() => createRedis({ redisUrl: REDIS_URL, redisClusterNodes: null }, { blocking: true }), false, (q) => t.keys(q).wake);
    const r = new WorkerRuntime({ ...t.stores, jobs }, handlers, waiter, {
      workerId: 'w-stall', queues, concurrency, leaseMs: 30_000, heartbeatIntervalMs: 10_000, shutdownGraceMs: 1000, maxIdleWaitMs: 200,
    });
    r.start();
    return r;
  }

  const enq = (queue: string, type: string, n: number) =>
    t.store.enqueue(Array.from({ length: n }, (_, i) => normalizeEnqueue({ queue, type, payload: { i } }, 1e6)));

  async function trail(queue: string, id: string): Promise<string> {
    return (await readEvents(t.redis, t.keys(queue).events)).filter((e) => e.j === id).map((e) => e.e).join(',');
  }

  it('the other queue is served meanwhile; the late answer runs its jobs', async () => {
    const s = stallingStore('s1');
    const done: string[] = [];
    const handlers = new HandlerMap();
    handlers.register('quick', async (_p, ctx) => {
      done.push(ctx.jobId);
      return null;
    });
    const stuck = await enq('s1', 'quick', 3);
    const free = await enq('f1', 'quick', 5);
    const t0 = Date.now();
    rt = runtime(s.jobs, handlers, ['s1', 'f1'], 4); // the stuck queue first: every turn meets it first
    await waitUntil('the other queue served', async () => free.every((r) => done.includes(r.id)) || undefined, 5000, 20);
    const servedMs = Date.now() - t0;
    expect(servedMs).toBeLessThan(2500); // about CLAIM_STALL_MS, not "never"
    expect(stuck.some((r) => done.includes(r.id))).toBe(false);
    expect(s.held()).toBe(1); // one claim in flight on the stuck queue, not one per turn
    s.open();
    await waitUntil('the late claim ran its jobs', async () => stuck.every((r) => done.includes(r.id)) || undefined, 5000, 20);
    for (const r of stuck) expect(await trail('s1', r.id)).toBe('enqueued,claimed,completed');
  });

  it('a late answer with no free slot is given back, and those jobs run later', async () => {
    const s = stallingStore('s2');
    const done: string[] = [];
    let finishLong!: () => void;
    const longDone = new Promise<void>((r) => (finishLong = r));
    cleanups.push(() => finishLong());
    const handlers = new HandlerMap();
    handlers.register('quick', async (_p, ctx) => {
      done.push(ctx.jobId);
      return null;
    });
    handlers.register('long', async (_p, ctx) => {
      await longDone;
      done.push(ctx.jobId);
      return null;
    });
    const stuck = await enq('s2', 'quick', 2);
    const long = await enq('f2', 'long', 2);
    rt = runtime(s.jobs, handlers, ['s2', 'f2'], 2);
    await waitUntil('both slots busy with the long jobs', async () => (await t.redis.zcard(t.keys('f2').active)) === 2 || undefined, 5000, 20);
    s.open(); // the claim on s2, sent when both slots were free, answers now with 2 jobs
    await waitUntil('the late jobs given back', async () => (await t.redis.zcard(t.keys('s2').waiting)) === 2 || undefined, 5000, 20);
    expect(rt.activeCount).toBe(2);
    finishLong();
    await waitUntil('every job done', async () => [...stuck, ...long].every((r) => done.includes(r.id)) || undefined, 5000, 20);
    for (const r of stuck) expect(await trail('s2', r.id)).toBe('enqueued,claimed,released,claimed,completed');
  });
});
