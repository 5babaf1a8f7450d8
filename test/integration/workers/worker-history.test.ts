import { mirrorWorkers } from '../../../src/workers/registry/worker-history';
import { WorkerRegistry } from '../../../src/workers/registry/worker-registry';
import { workerKey } from '../../../src/redis/keys';
import { RedisWorkerRegistryStore } from '../../../src/redis/stores/worker-registry-store';
import { openTestDb, TestDb } from '../../support/postgres';
import { openStore, TestStore } from '../../support/redis';

let t: TestStore;
let db: TestDb;
beforeAll(async () => {
  t = await openStore('worker-history');
  db = await openTestDb('workers');
});
afterAll(async () => {
  await t.close();
  await db.close();
});

test('the worker registry is copied into the workers table, and a dead worker keeps its recorded details', async () => {
  const registry = new RedisWorkerRegistryStore(t.redis, t.prefix);
  const reg = new WorkerRegistry(registry, { id: 'w-a', queues: ['q1', 'q2'], concurrency: 7 }, 60_000);
  await reg.beat(3);
  expect(await mirrorWorkers(db.dataSource, registry)).toBe(1);
  let [row] = await db.dataSource.query(`SELECT * FROM workers WHERE id = 'w-a'`);
  expect([row.queues, row.concurrency, row.status, row.pid]).toEqual(['q1,q2', 7, 'running', process.pid]);
  // The hash expires (worker died): the registry reports it dead; the table keeps the details.
  await t.redis.del(workerKey(t.prefix, 'w-a'));
  expect(await mirrorWorkers(db.dataSource, registry)).toBe(1);
  [row] = await db.dataSource.query(`SELECT * FROM workers WHERE id = 'w-a'`);
  expect([row.queues, row.concurrency, row.status, row.pid]).toEqual(['q1,q2', 7, 'dead', process.pid]);
});
