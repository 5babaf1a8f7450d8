import { HandlerMap } from '../../../src/core/handler';
import { normalizeEnqueue } from '../../../src/core/job-options';
import type { Logger } from '../../../src/core/logger';
import type { JobStore } from '../../../src/core/ports';
import { createRedis } from '../../../src/redis/connection';
import { RedisWakeWaiter } from '../../../src/redis/wake/wake-waiter';
import { WorkerRuntime } from '../../../src/workers/runtime/worker-runtime';
import { openStore, REDIS_URL, TestStore } from '../../support/redis';
import { sleepMs as sleep } from '../../support/redis-server';
import { events, waitUntil } from '../../support/timing';

/**
 * The worker runtime when Redis does not answer an ack (C26, issue 19): on
 * real Redis, with a job store that loses replies, fails or hangs on purpose.
 * - a complete whose reply was lost is sent again with the same lock token
 *   and answered `completed` (the script recognises the repeat), never
 *   refused, and the job completes once;
 * - a fail that got no answer is sent again until it lands;
 * - an ack that never gets an answer is given up once its lease has
 *   certainly expired (the reaper re-delivers the job);
 * - a heartbeat that hangs is not sent again on top of itself and does not
 *   end the job;
 * - stop() does not wait past the grace period (plus 1 s for the releases
 *   and acks) for a store that does not answer.
 */

const lost = () => new Error('Connection is closed.');

interface Lines {
  warn: string[];
  info: string[];
}
function capture(): { log: Logger; lines: Lines } {
  const lines: Lines = { warn: [], info: [] };
  return {
    lines,
    log: { debug() {}, info: (_o, m) => lines.info.push(m ?? ''), warn: (_o, m) => lines.warn.push(m ?? ''), error: (_o, m) => lines.warn.push(m ?? '') },
  };
}

describe('worker runtime: acks Redis does not answer', () => {
  let t: TestStore;
  const runtimes: WorkerRuntime[] = [];
  beforeAll(async () => {
    t = await openStore('ack-retry');
  });
  afterAll(async () => {
    await Promise.all(runtimes.map((r) => r.stop())); // bounded by each grace period
    await t.close();
  });

  /** A runtime on queue `q` whose job store is `jobs` (the real one with some methods replaced). */
  function start(q: string, jobs: JobStore, handlers: HandlerMap, log: Logger, over: { leaseMs?: number; heartbeatIntervalMs?: number; shutdownGraceMs?: number } = {}) {
    const waiter = new RedisWakeWaiter(() => createRedis({ redisUrl: REDIS_URL, redisClusterNodes: null }, { blocking: true }), false, (x) => t.keys(x).wake);
    const rt = new WorkerRuntime(
      { jobs, queues: t.stores.queues, connection: t.stores.connection },
      handlers,
      waiter,
      { workerId: 'w-ack', queues: [q], concurrency: 4, leaseMs: 30_000, heartbeatIntervalMs: 10_000, shutdownGraceMs: 1000, maxIdleWaitMs: 200, ...over },
      log,
    );
    runtimes.push(rt);
    rt.start();
    return rt;
  }
  /** The real job store with `over` in place of some of its methods. */
  const faulty = (over: Partial<Record<keyof JobStore, unknown>>): JobStore => Object.assign(Object.create(t.store) as JobStore, over);
  const enq = async (queue: string, type: string, maxAttempts = 1) => (await t.store.enqueue([normalizeEnqueue({ queue, type, payload: {}, maxAttempts }, 1e6)]))[0].id;

  it('a complete whose reply was lost is sent again with the same token and answered completed, not refused', async () => {
    const q = 'ack-lost-reply';
    const sent: string[][] = [];
    let calls = 0;
    const jobs = faulty({
      complete: async (queue: string, workerId: string, acks: { id: string; lockToken: string; result: unknown }[]) => {
        sent.push(acks.map((a) => a.lockToken));
        const out = await t.store.complete(queue, workerId, acks as never);
        if (++calls === 1) throw lost(); // it landed; the reply did not
        return out;
      },
    });
    const handlers = new HandlerMap();
    handlers.register('ok', async () => ({ v: 1 }));
    const { log, lines } = capture();
    const rt = start(q, jobs, handlers, log);
    const id = await enq(q, 'ok');
    await waitUntil('the ack answered', async () => (calls >= 2 && rt.unackedCount === 0) || undefined, 5000, 20);
    expect(sent.length).toBe(2);
    expect(sent[1]).toEqual(sent[0]);
    expect(lines.warn.filter((m) => /refused/.test(m))).toEqual([]);
    expect(lines.warn.some((m) => /sending it again with the same lock tokens/.test(m))).toBe(true);
    expect((await t.store.getJob(q, id))!).toMatchObject({ status: 'completed', result: { v: 1 }, attempts: 1 });
    expect((await events(t.redis, t.keys(q).events, id)).filter((e) => e.e === 'completed')).toHaveLength(1);
  });

  it('a fail that got no answer is sent again until it lands', async () => {
    const q = 'ack-fail-retry';
    const tokens: string[] = [];
    const jobs = faulty({
      fail: async (queue: string, id: string, lockToken: string, input: never) => {
        tokens.push(lockToken);
        if (tokens.length <= 3) throw lost(); // nothing sent to Redis
        return t.store.fail(queue, id, lockToken, input);
      },
    });
    const handlers = new HandlerMap();
    handlers.register('boom', async () => {
      throw new Error('boom');
    });
    const { log } = capture();
    start(q, jobs, handlers, log);
    const id = await enq(q, 'boom');
    await waitUntil('the job dead-lettered', async () => (await t.store.getJob(q, id))?.status === 'failed' || undefined, 5000, 20);
    expect(tokens).toHaveLength(4);
    expect(new Set(tokens).size).toBe(1);
    expect((await events(t.redis, t.keys(q).events, id)).map((e) => e.e)).toEqual(['enqueued', 'claimed', 'failed']);
  });

  it('an ack never answered is given up once its lease has certainly expired', async () => {
    const q = 'ack-give-up';
    let calls = 0;
    const jobs = faulty({
      complete: async () => {
        calls++;
        throw lost();
      },
    });
    const handlers = new HandlerMap();
    handlers.register('ok', async () => null);
    const { log, lines } = capture();
    const rt = start(q, jobs, handlers, log, { leaseMs: 300, heartbeatIntervalMs: 100 });
    await enq(q, 'ok');
    await waitUntil('the ack sent', async () => calls > 0 || undefined, 5000, 10);
    expect(rt.unackedCount).toBe(1);
    // Lease 300 ms + 2 s of slack, then the next try gives up.
    await waitUntil('the ack given up', async () => rt.unackedCount === 0 || undefined, 6000, 50);
    expect(calls).toBeGreaterThan(3);
    expect(lines.warn.some((m) => /given up: leases expired/.test(m))).toBe(true);
  });

  it('a heartbeat that hangs is not sent again on top of itself and does not end the job', async () => {
    const q = 'ack-hb-stall';
    let calls = 0;
    const jobs = faulty({
      extendLeases: async (queue: string, leases: never, leaseMs: number) => {
        if (++calls === 1) await sleep(1200); // a stalled Redis: the answer comes late
        return t.store.extendLeases(queue, leases, leaseMs);
      },
    });
    const handlers = new HandlerMap();
    handlers.register('slow', async () => {
      await sleep(1500);
      return 'done';
    });
    const { log } = capture();
    start(q, jobs, handlers, log, { leaseMs: 5000, heartbeatIntervalMs: 100 });
    const id = await enq(q, 'slow');
    await waitUntil('the job completed', async () => (await t.store.getJob(q, id))?.status === 'completed' || undefined, 5000, 20);
    // 15 ticks in 1.5 s; while the first call hung (1.2 s) no other was sent.
    expect(calls).toBeLessThanOrEqual(5);
    expect((await t.store.getJob(q, id))!).toMatchObject({ result: 'done', attempts: 1 });
  });

  it('stop() ends after the grace period when Redis does not answer the ack', async () => {
    const q = 'ack-stop-hung';
    let calls = 0;
    const jobs = faulty({
      complete: () => {
        calls++;
        return new Promise(() => undefined); // a frozen Redis: no answer, no error
      },
    });
    const handlers = new HandlerMap();
    handlers.register('ok', async () => null);
    const { log, lines } = capture();
    const rt = start(q, jobs, handlers, log, { shutdownGraceMs: 500 });
    await enq(q, 'ok');
    await waitUntil('the ack sent', async () => calls > 0 || undefined, 5000, 10);
    const t0 = Date.now();
    await rt.stop();
    const took = Date.now() - t0;
    expect(took).toBeGreaterThanOrEqual(400);
    expect(took).toBeLessThan(2500); // grace 500 + 1000 for the releases and acks, + slack
    expect(lines.warn.some((m) => /redis has not confirmed/.test(m))).toBe(true);
  });
});
