import { Registry } from 'prom-client';
import { registerQueueMetrics, TOP_KEYS_MAX_AGE_MS, TOP_KEYS_PER_QUEUE, type QueueSources } from './queue-metrics';

type KeyRow = { key: string; waiting: number; active: number };

/** Sources with mutable per-queue keys; the fake store ranks and limits like QueueStore.keys. */
function fakeSources(keys: Record<string, KeyRow[]>) {
  const reads: string[] = [];
  let fail = false;
  const sources: QueueSources = {
    listQueues: async () => Object.keys(keys).sort(),
    liveCounts: async () => ({ waiting: 1, delayed: 0, active: 0, failed: 0 }),
    oldestWaitingSince: async () => null,
    redisNowMs: async () => 0,
    topKeys: async (queue, limit) => {
      reads.push(queue);
      if (fail) throw new Error('redis down');
      return [...keys[queue]].sort((a, b) => b.waiting + b.active - (a.waiting + a.active)).slice(0, limit);
    },
  };
  return { sources, reads, setFail: (v: boolean) => (fail = v) };
}

/** The sluice_queue_key_jobs samples of one scrape, as `queue|key|state -> value`. */
async function keySeries(registry: Registry): Promise<Map<string, number>> {
  const out = new Map<string, number>();
  for (const line of (await registry.metrics()).split('\n')) {
    const m = /^sluice_queue_key_jobs\{project="([^"]*)",queue="([^"]*)",key="([^"]*)",state="([^"]*)"\} (\d+)$/.exec(line);
    if (m) out.set(`${m[1]}/${m[2]}|${m[3]}|${m[4]}`, Number(m[5]));
  }
  return out;
}

const rows = (n: number, prefix = 'k'): KeyRow[] => Array.from({ length: n }, (_, i) => ({ key: `${prefix}${i}`, waiting: i + 1, active: i % 2 }));

describe('sluice_queue_key_jobs', () => {
  it('shows the 10 busiest keys of each queue, waiting and active, and no more', async () => {
    const registry = new Registry();
    const { sources } = fakeSources({ big: rows(25), 'p1/small': rows(3, 's') });
    registerQueueMetrics(registry, sources);
    const s = await keySeries(registry);
    const big = [...s.keys()].filter((k) => k.startsWith('default/big|'));
    expect(big).toHaveLength(TOP_KEYS_PER_QUEUE * 2);
    // The busiest (k24: 25 waiting, 0 active) to the 10th (k15: 16 waiting, 1 active).
    expect(s.get('default/big|k24|waiting')).toBe(25);
    expect(s.get('default/big|k24|active')).toBe(0);
    expect(s.get('default/big|k15|waiting')).toBe(16);
    expect(s.get('default/big|k15|active')).toBe(1);
    expect(s.has('default/big|k14|waiting')).toBe(false);
    expect([...s.keys()].filter((k) => k.startsWith('p1/small|'))).toHaveLength(6);
  });

  it('bounds the series even when the source returns more than asked', async () => {
    const registry = new Registry();
    const { sources } = fakeSources({ q: rows(40) });
    registerQueueMetrics(registry, { ...sources, topKeys: async () => rows(40) });
    expect((await keySeries(registry)).size).toBe(TOP_KEYS_PER_QUEUE * 2);
  });

  it('removes the series of a key that dropped out of the top 10; re-reads a keyed queue only after TOP_KEYS_MAX_AGE_MS', async () => {
    const registry = new Registry();
    const keys = { q: rows(12), idle: [] as KeyRow[] };
    const { sources, reads } = fakeSources(keys);
    let now = 1_000_000;
    registerQueueMetrics(registry, sources, { now: () => now });
    expect((await keySeries(registry)).has('default/q|k11|waiting')).toBe(true);
    // k11 finishes its jobs: k1 enters the top 10.
    keys.q = keys.q.map((r) => (r.key === 'k11' ? { ...r, waiting: 0, active: 0 } : r));
    now += TOP_KEYS_MAX_AGE_MS - 1;
    expect((await keySeries(registry)).has('default/q|k11|waiting')).toBe(true); // the cached read
    expect(reads.filter((q) => q === 'q')).toHaveLength(1);
    expect(reads.filter((q) => q === 'idle')).toHaveLength(2); // a queue without keys: every scrape
    now += 1;
    const s = await keySeries(registry);
    expect(reads.filter((q) => q === 'q')).toHaveLength(2);
    expect(s.has('default/q|k11|waiting')).toBe(false);
    expect(s.has('default/q|k11|active')).toBe(false);
    expect(s.get('default/q|k1|waiting')).toBe(2);
    expect([...s.keys()].filter((k) => k.startsWith('default/q|'))).toHaveLength(TOP_KEYS_PER_QUEUE * 2);
  });

  it('a failed key read leaves the key series out, not the queue series', async () => {
    const registry = new Registry();
    const { sources, setFail } = fakeSources({ q: rows(3) });
    setFail(true);
    registerQueueMetrics(registry, sources);
    expect((await keySeries(registry)).size).toBe(0);
    const text = await registry.metrics();
    expect(text).toMatch(/^sluice_queue_jobs\{project="default",queue="q",state="waiting"\} 1$/m);
    expect(text).toMatch(/^sluice_queue_depth_scrape_success 1$/m);
    setFail(false);
    expect((await keySeries(registry)).size).toBe(6);
  });

  it('keySeries false (a worker-only process): no key series and no key reads', async () => {
    const registry = new Registry();
    const { sources, reads } = fakeSources({ q: rows(3) });
    registerQueueMetrics(registry, sources, { keySeries: false });
    expect(await registry.metrics()).not.toMatch(/sluice_queue_key_jobs/);
    expect(await registry.metrics()).toMatch(/^sluice_queue_jobs\{project="default",queue="q",state="waiting"\} 1$/m);
    expect(reads).toHaveLength(0);
  });
});
