import { type RedisStores } from '../../../src/redis/stores';
import { REDIS_STORES } from '../../../src/redis/redis.module';
import { startTestApi, TestApi } from '../../support/http';
import { killAll, SluiceProcess, startSluice } from '../../support/process';
import { sleep } from '../../support/redis';
import { slotsOf } from './support';

/**
 * Three `ROLE=scheduler` processes (dist/main.js) on one 1-second schedule
 * for 30 s, created and deleted through the HTTP API: every slot is
 * enqueued exactly once, and nothing fires after the delete.
 */
describe('cron across scheduler replicas (processes)', () => {
  let api: TestApi;
  const procs: SluiceProcess[] = [];

  beforeAll(async () => {
    api = await startTestApi('sched_rep');
  });
  afterAll(async () => {
    await killAll(procs);
    await api?.close();
  });

  it('3 schedulers, * * * * * * for 30 s: each slot exactly once; deleting stops it within one slot', async () => {
    const created = await api.http.post('/schedules').send({ name: 'every-second', cron: '* * * * * *', queue: 'cron', type: 'diag.echo', payload: { n: 1 } });
    expect(created.status).toBe(201);
    const id: string = created.body.id;
    const env = { ROLE: 'scheduler', DATABASE_URL: api.db.url, REDIS_PREFIX: api.prefix, LOG_LEVEL: 'info' };
    procs.push(...(await Promise.all([0, 1, 2].map(() => startSluice(env, { waitReady: false })))));
    await Promise.all(procs.map((p) => p.waitFor(/"msg":"sluice listening/, 30_000)));
    const allUp = Date.now();
    await sleep(30_000);

    const deleted = await api.http.delete(`/schedules/${id}`);
    expect(deleted.status).toBe(200);
    const deletedAt = Date.now();
    await sleep(3000);

    const store = api.app.get<RedisStores>(REDIS_STORES);
    const slots = (await slotsOf(store, 'cron', id)).map(Date.parse);
    // At most once: the jobs' idempotency keys are one per slot, and no slot repeats.
    expect(new Set(slots).size).toBe(slots.length);
    // Exactly once: every second of the 30 s has its job. A slot may be
    // skipped only if all three processes stalled past the next slot (the
    // missed-run rule); allow two such stalls on a loaded machine.
    const window = slots.filter((t) => t > allUp + 1000 && t < allUp + 29_000);
    expect(window.length).toBeGreaterThanOrEqual(26);
    for (let i = 1; i < slots.length; i++) expect(slots[i] - slots[i - 1]).toBeLessThanOrEqual(3000);
    // Stopped at the delete: no slot after it was claimed.
    expect(Math.max(...slots)).toBeLessThanOrEqual(deletedAt);
    for (const p of procs) expect(p.output()).not.toMatch(/"level":50/); // no error lines
  }, 120_000);
});
