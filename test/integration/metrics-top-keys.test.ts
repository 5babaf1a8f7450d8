import { Registry } from 'prom-client';
import { normalizeEnqueue, type NormalizedEnqueue } from '../../src/core/job-options';
import { queueSources } from '../../src/metrics/metrics.module';
import { registerQueueMetrics, TOP_KEYS_MAX_AGE_MS, TOP_KEYS_PER_QUEUE } from '../../src/metrics/queue-metrics';
import { openStore, TestStore } from '../support/redis';

/**
 * `sluice_queue_key_jobs` on real Redis through the store's top-keys read
 * (lua/topKeys-1.lua): the 10 busiest keys of each queue appear with their
 * waiting and active counts, never more than 10 per queue, and a key that
 * drops out of the top loses its series.
 */
describe('GET /metrics: top concurrency keys per queue (real Redis)', () => {
  let t: TestStore;
  beforeAll(async () => {
    t = await openStore('top-keys');
  });
  afterAll(async () => {
    await t?.close();
  });

  const job = (queue: string, key: string | undefined): NormalizedEnqueue => {
    const j = normalizeEnqueue({ queue, type: 'x', payload: {} }, 1e6);
    return key === undefined ? j : { ...j, concurrencyKey: key };
  };
  const enqueue = (queue: string, key: string | undefined, n: number) => t.store.enqueue(Array.from({ length: n }, () => job(queue, key)));

  /** `queue|key|state -> value` of one scrape. */
  async function keySeries(registry: Registry): Promise<Map<string, number>> {
    const out = new Map<string, number>();
    for (const line of (await registry.metrics()).split('\n')) {
      const m = /^sluice_queue_key_jobs\{project="default",queue="([^"]*)",key="([^"]*)",state="([^"]*)"\} (\d+)$/.exec(line);
      if (m) out.set(`${m[1]}|${m[2]}|${m[3]}`, Number(m[4]));
    }
    return out;
  }
  const ofQueue = (s: Map<string, number>, q: string) => [...s.keys()].filter((k) => k.startsWith(`${q}|`));

  it('25 keys: the 10 busiest, waiting and active; a queue of 3 keys shows 3; a new busier key pushes the 10th out', async () => {
    // Key kI has I + 1 jobs; unkeyed jobs are no key's.
    for (let i = 0; i < 25; i++) await enqueue('tk1', `k${i}`, i + 1);
    await enqueue('tk1', undefined, 5);
    // Lanes mode before the first keyed job: otherwise that job is also copied
    // into the unkeyed lane (lua/includes/lanes.lua makeReady adds it to the
    // waiting set before lanesOn copies the set), a claim may take it from
    // there, and its key's lane keeps a stale entry that topKeys counts as waiting.
    await t.stores.queues.configure('tk2', { fairness: 'round_robin' });
    for (const k of ['a', 'b', 'c']) await enqueue('tk2', k, 2);
    await enqueue('tk3', undefined, 4); // a queue without keys: no key series
    const claimed = await t.store.claim('tk2', 1, 30_000, 'w1');
    expect(claimed.jobs).toHaveLength(1);

    const registry = new Registry();
    let now = 1_000_000;
    registerQueueMetrics(registry, queueSources(t.stores.queues, t.stores.connection), { now: () => now });
    const s = await keySeries(registry);
    expect(ofQueue(s, 'tk1')).toHaveLength(TOP_KEYS_PER_QUEUE * 2);
    expect(s.get('tk1|k24|waiting')).toBe(25);
    expect(s.get('tk1|k24|active')).toBe(0);
    expect(s.get('tk1|k15|waiting')).toBe(16);
    expect(s.has('tk1|k14|waiting')).toBe(false);
    expect(ofQueue(s, 'tk2')).toHaveLength(6);
    expect([...s.entries()].filter(([k, v]) => k.startsWith('tk2|') && k.endsWith('|active') && v === 1)).toHaveLength(1);
    expect([...s.entries()].filter(([k]) => k.startsWith('tk2|') && k.endsWith('|waiting')).reduce((sum, [, v]) => sum + v, 0)).toBe(5);
    expect(ofQueue(s, 'tk3')).toHaveLength(0);
    // The queue series are still there beside them.
    expect(await registry.metrics()).toMatch(/^sluice_queue_jobs\{project="default",queue="tk1",state="waiting"\} 330$/m);

    await enqueue('tk1', 'hot', 30);
    now += TOP_KEYS_MAX_AGE_MS;
    const after = await keySeries(registry);
    expect(after.get('tk1|hot|waiting')).toBe(30);
    expect(after.has('tk1|k15|waiting')).toBe(false);
    expect(after.has('tk1|k15|active')).toBe(false);
    expect(ofQueue(after, 'tk1')).toHaveLength(TOP_KEYS_PER_QUEUE * 2);
  });
});
