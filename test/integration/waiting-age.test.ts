import { oldestWaitingSince } from '../../src/redis/waiting-age';
import { enqueue } from '../support/cases';
import { openStore, sleep, TestStore } from '../support/redis';

/**
 * src/redis/waiting-age.ts on real Redis and the real scripts: the waiting
 * set's layout (score = (100 − priority)·2^44 + sequence) and the job hash
 * fields (`ca`, `ua`) are the ones the enqueue, promotion and claim scripts write.
 */
describe('oldest waiting job (real Redis)', () => {
  let t: TestStore;
  beforeAll(async () => {
    t = await openStore('waiting-age');
  });
  afterAll(async () => {
    await t?.close();
  });

  const since = () => oldestWaitingSince(t.redis, t.keys('wa'));
  const hget = (id: string, f: string) => t.redis.hget(t.keys('wa').base + 'job:' + id, f);

  it('low priority behind high priority, a promoted delayed job, then a claim', async () => {
    expect(await since()).toBeNull();
    const [low] = await enqueue(t, [{ queue: 'wa', type: 'x', priority: -10 }]);
    await sleep(50);
    const [delayed] = await enqueue(t, [{ queue: 'wa', type: 'x', priority: 90, delayMs: 300 }]);
    await sleep(50);
    const [high] = await enqueue(t, [{ queue: 'wa', type: 'x', priority: 50 }]);
    // The set's first member is the high-priority job; the oldest is the low one.
    expect((await t.redis.zrange(t.keys('wa').waiting, 0, 0))[0]).toBe(high);
    expect(await since()).toBe(Number(await hget(low, 'ca')));

    await sleep(400);
    expect((await t.store.promoteDelayed('wa', 10)).promoted).toBe(1);
    // The promoted job is first in line, waiting since its promotion (not its creation).
    expect((await t.redis.zrange(t.keys('wa').waiting, 0, 0))[0]).toBe(delayed);
    expect(Number(await hget(delayed, 'ua'))).toBeGreaterThan(Number(await hget(delayed, 'ca')) + 300);
    expect(await since()).toBe(Number(await hget(low, 'ca')));

    // Claimed in priority order: delayed (90), high (50), low (-10).
    const claimed = await t.store.claim('wa', 2, 30_000, 'w1');
    expect(claimed.jobs.map((j) => j.id)).toEqual([delayed, high]);
    expect(await since()).toBe(Number(await hget(low, 'ca')));
    await t.store.claim('wa', 1, 30_000, 'w1');
    expect(await since()).toBeNull();
  });
});
