import { HandlerMap } from '../../../src/core/handler';
import { normalizeEnqueue } from '../../../src/core/job-options';
import { createRedis } from '../../../src/redis/connection';
import { RedisWakeWaiter } from '../../../src/redis/wake/wake-waiter';
import { WorkerRuntime } from '../../../src/workers/runtime/worker-runtime';
import { openStore, REDIS_URL, TestStore } from '../../support/redis';
import { waitUntil } from '../../support/timing';

/**
 * QUEUES=*: a queue whose claim took nothing is left out of a busy worker's
 * passes for a moment (worker-runtime.ts EMPTY_RECHECK_MS), so idle queues
 * beside a busy one no longer cost a claim script per pass; a job that
 * arrives in one meanwhile still starts promptly, busy or idle.
 */
describe('worker runtime: idle queues beside a busy one (QUEUES=*)', () => {
  let t: TestStore;
  let rt: WorkerRuntime | undefined;
  beforeAll(async () => {
    t = await openStore('empty-queues');
  });
  afterAll(async () => {
    await rt?.stop();
    await t.close();
  });

  it('claims idle queues far less often than once per pass, and still starts what arrives there', async () => {
    const busy = 'zz-busy';
    const idle = ['aa-idle-1', 'aa-idle-2', 'aa-idle-3'];
    for (const q of [...idle, busy]) await t.stores.queues.register(q);
    const startedAt = new Map<string, number>();
    let done = 0;
    const handlers = new HandlerMap();
    handlers.register('quick', async (p) => {
      startedAt.set(String((p as { tag: string }).tag), Date.now());
      await new Promise((r) => setImmediate(r));
      done++;
      return null;
    });
    // Claims per queue, counted at the store.
    const claims = new Map<string, number>();
    const store = t.stores.jobs;
    const claimForWorker = store.claimForWorker.bind(store);
    store.claimForWorker = (queue, ...rest) => {
      claims.set(queue, (claims.get(queue) ?? 0) + 1);
      return claimForWorker(queue, ...rest);
    };
    const n = 3000;
    await t.store.enqueue(Array.from({ length: n }, (_, i) => normalizeEnqueue({ queue: busy, type: 'quick', payload: { tag: `b${i}` } }, 1e6)));
    const waiter = new RedisWakeWaiter(() => createRedis({ redisUrl: REDIS_URL, redisClusterNodes: null }, { blocking: true }), false, (q) => t.keys(q).wake);
    rt = new WorkerRuntime({ ...t.stores, jobs: store }, handlers, waiter, {
      workerId: 'w-empty',
      queues: ['*'],
      concurrency: 4,
      leaseMs: 30_000,
      heartbeatIntervalMs: 10_000,
      shutdownGraceMs: 1000,
    });
    rt.start();
    await waitUntil('the busy queue under way', async () => done > 200 || undefined, 10_000);
    // A job into an idle queue while the worker is busy: it starts within the recheck, not after the backlog.
    const posted = Date.now();
    await t.store.enqueue([normalizeEnqueue({ queue: idle[1], type: 'quick', payload: { tag: 'late' } }, 1e6)]);
    await waitUntil('the idle queue job started', async () => startedAt.get('late') || undefined, 5000);
    expect(startedAt.get('late')! - posted).toBeLessThan(1000);
    expect(done).toBeLessThan(n); // it did not wait for the backlog
    await waitUntil('the backlog done', async () => done === n + 1 || undefined, 30_000);
    const busyClaims = claims.get(busy) ?? 0;
    // Each pass claimed every idle queue before: about as many claims of each as of the busy one.
    for (const q of [idle[0], idle[2]]) expect(claims.get(q) ?? 0).toBeLessThan(busyClaims / 3);
    // Idle again: a job into an idle queue wakes the worker at once.
    await new Promise((r) => setTimeout(r, 100));
    const idlePosted = Date.now();
    await t.store.enqueue([normalizeEnqueue({ queue: idle[2], type: 'quick', payload: { tag: 'idle' } }, 1e6)]);
    await waitUntil('the job on an idle worker started', async () => startedAt.get('idle') || undefined, 5000);
    expect(startedAt.get('idle')! - idlePosted).toBeLessThan(500);
  });
});
