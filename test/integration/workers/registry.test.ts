import { workerKey, workersKey } from '../../../src/redis/keys';
import { RedisWorkerRegistryStore } from '../../../src/redis/stores/worker-registry-store';
import { WorkerRegistry } from '../../../src/workers/registry/worker-registry';
import { openStore, TestStore } from '../../support/redis';
import { sleepMs } from '../../support/redis-server';

describe('worker registry', () => {
  let t: TestStore;
  beforeAll(async () => {
    t = await openStore('registry');
  });
  afterAll(async () => {
    await t.close();
  });

  it('running → dead after missed heartbeats (details kept) → swept with its hash', async () => {
    const registry = new RedisWorkerRegistryStore(t.redis, t.prefix);
    const reg = new WorkerRegistry(registry, { id: 'w-1', queues: ['a', 'b'], concurrency: 3 }, 100);
    await reg.beat(2);
    expect(await WorkerRegistry.list(registry)).toEqual([
      expect.objectContaining({ id: 'w-1', status: 'running', active: 2, queues: ['a', 'b'], concurrency: 3, pid: process.pid }),
    ]);
    await sleepMs(200);
    expect(await WorkerRegistry.list(registry)).toEqual([
      expect.objectContaining({ id: 'w-1', status: 'dead', queues: ['a', 'b'], concurrency: 3, pid: process.pid }),
    ]);
    // Not old enough to drop yet.
    expect(await WorkerRegistry.sweep(registry, 60_000)).toBe(0);
    expect(await WorkerRegistry.sweep(registry, 50)).toBe(1);
    expect(await t.redis.exists(workerKey(t.prefix, 'w-1'))).toBe(0);
    expect(await t.redis.zcard(workersKey(t.prefix))).toBe(0);
    expect(await WorkerRegistry.list(registry)).toEqual([]);
  });
});
