import type { EnqueueInput, NormalizedEnqueue } from '../../src/core/job-options';
import type { TestStore } from './redis';
import { scriptHelpers } from './scripts';

/**
 * Helpers of the flow-control-per-key tests (test/integration/scripts/lanes*,
 * turns-edges): keyed jobs in batches of 1,000, one-worker claims, a job's key.
 */
export function laneHelpers(store: () => TestStore, queuePrefix: string) {
  const h = scriptHelpers(store, queuePrefix);
  const keyed = (q: string, key: string | undefined, input: Partial<EnqueueInput> = {}): NormalizedEnqueue => ({ ...h.norm(q, input), ...(key ? { concurrencyKey: key } : {}) });
  /** Enqueues n jobs of `key` (none: unkeyed) with payload {i}; returns their ids in order. */
  async function enqKeyed(q: string, key: string | undefined, n: number, input: Partial<EnqueueInput> = {}): Promise<string[]> {
    const out: string[] = [];
    for (let i = 0; i < n; i += 1000) {
      const part = await store().store.enqueue(Array.from({ length: Math.min(1000, n - i) }, (_, j) => keyed(q, key, { payload: { i: i + j }, ...input })));
      out.push(...part.map((r) => r.id));
    }
    return out;
  }
  const keyOf = async (q: string, id: string) => (await h.raw(q, id)).ck ?? '';
  const claim = (q: string, n = 1, leaseMs = 30_000) => store().store.claim(q, n, leaseMs, 'w1');
  return { ...h, keyed, enqKeyed, keyOf, claim };
}
