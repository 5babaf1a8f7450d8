import { ValidationError } from '../core/errors';
import type { KeyLimits, KeyStats, QueueSettings, QueueStore } from '../core/ports';
import { QueueNotFoundError } from './queue-name';
import { QueueKeysService } from './queue-keys.service';

/** A QueueStore fake: the queues that exist (by qualified name), each with its settings and keys; records the calls. */
function fakeStore(queues: Record<string, { settings?: Partial<QueueSettings>; keys?: KeyStats[] }>) {
  const calls: string[] = [];
  const overrides = new Map<string, KeyLimits>();
  const settings = (name: string): QueueSettings => ({
    name,
    paused: false,
    maxConcurrency: null,
    rateLimit: null,
    external: false,
    defaults: {},
    keyConcurrency: null,
    keyRateLimit: null,
    fairness: 'fifo',
    agingMs: null,
    summaryIncludesPayload: false,
    ...queues[name]?.settings,
  });
  const store = {
    settings: async (q: string) => (calls.push(`settings ${q}`), queues[q] ? settings(q) : null),
    keys: async (q: string, limit: number) => (calls.push(`keys ${q} ${limit}`), (queues[q]?.keys ?? []).slice(0, limit)),
    setKeyOverride: async (q: string, key: string, change: Partial<KeyLimits>) => {
      calls.push(`set ${q} ${key} ${JSON.stringify(change)}`);
      const next = { concurrency: null, rateLimit: null, ...overrides.get(`${q}\u0000${key}`), ...change };
      overrides.set(`${q}\u0000${key}`, next);
      return next;
    },
    keyCounts: async (q: string, key: string) => {
      const k = (queues[q]?.keys ?? []).find((x) => x.key === key);
      return { waiting: k?.waiting ?? 0, active: k?.active ?? 0 };
    },
    deleteKeyOverride: async (q: string, key: string) => (calls.push(`delete ${q} ${key}`), overrides.delete(`${q}\u0000${key}`)),
  } as unknown as QueueStore;
  return { store, calls };
}

describe('QueueKeysService', () => {
  const keyed: KeyStats[] = [
    { key: 'big', waiting: 100, active: 2, overrides: null },
    { key: 'vip', waiting: 3, active: 1, overrides: { concurrency: 10, rateLimit: null } },
    { key: 'slow', waiting: 0, active: 0, overrides: { concurrency: null, rateLimit: { max: 1, durationMs: 1000 } } },
    { key: 'empty-override', waiting: 1, active: 0, overrides: { concurrency: null, rateLimit: null } },
  ];
  const queueSettings = { keyConcurrency: 2, keyRateLimit: { max: 50, durationMs: 60_000 } };

  it("lists the store's keys with the limits in force: the override's field where set, else the queue's; an override of two nulls is none", async () => {
    const { store, calls } = fakeStore({ orders: { settings: queueSettings, keys: keyed } });
    const items = await new QueueKeysService(store).list('orders', 'default', 50);
    expect(calls).toEqual(['settings orders', 'keys orders 50']);
    expect(items).toEqual([
      { key: 'big', waiting: 100, active: 2, overrides: null, limits: { concurrency: 2, rateLimit: { max: 50, durationMs: 60_000 } } },
      { key: 'vip', waiting: 3, active: 1, overrides: { concurrency: 10, rateLimit: null }, limits: { concurrency: 10, rateLimit: { max: 50, durationMs: 60_000 } } },
      { key: 'slow', waiting: 0, active: 0, overrides: { concurrency: null, rateLimit: { max: 1, durationMs: 1000 } }, limits: { concurrency: 2, rateLimit: { max: 1, durationMs: 1000 } } },
      { key: 'empty-override', waiting: 1, active: 0, overrides: null, limits: { concurrency: 2, rateLimit: { max: 50, durationMs: 60_000 } } },
    ]);
    // A queue without per-key limits: null limits.
    const bare = fakeStore({ plain: { keys: [keyed[0]] } });
    expect((await new QueueKeysService(bare.store).list('plain', 'default'))[0].limits).toEqual({ concurrency: null, rateLimit: null });
    expect(bare.calls).toContain('keys plain 50');
  });

  it("acts on the caller's project's queue only: the qualified name reaches the store, another project's queue is 404", async () => {
    const { store, calls } = fakeStore({ 'acme/orders': { keys: keyed }, orders: { keys: [] } });
    const svc = new QueueKeysService(store);
    expect((await svc.list('orders', 'acme')).map((k) => k.key)).toEqual(['big', 'vip', 'slow', 'empty-override']);
    expect(await svc.list('orders', 'default')).toEqual([]);
    await expect(svc.list('orders', 'other')).rejects.toBeInstanceOf(QueueNotFoundError);
    await expect(svc.setOverride('orders', 'vip', { concurrency: 1 }, 'other')).rejects.toBeInstanceOf(QueueNotFoundError);
    await expect(svc.deleteOverride('orders', 'vip', 'other')).rejects.toBeInstanceOf(QueueNotFoundError);
    expect(calls.filter((c) => c.startsWith('set ') || c.startsWith('delete '))).toEqual([]);
    expect(calls).toContain('settings other/orders');
  });

  it('a queue that does not exist, or a name that cannot be one, is 404 and never reaches the store', async () => {
    const { store, calls } = fakeStore({});
    const svc = new QueueKeysService(store);
    for (const name of ['nope', 'Bad Name', 'a/b', '']) {
      await expect(svc.list(name, 'default')).rejects.toMatchObject({ code: 'not_found' });
      await expect(svc.setOverride(name, 'k', {}, 'default')).rejects.toMatchObject({ code: 'not_found' });
      await expect(svc.deleteOverride(name, 'k', 'default')).rejects.toMatchObject({ code: 'not_found' });
    }
    expect(calls.every((c) => c === 'settings nope')).toBe(true);
  });

  it('a key of 0 or over 128 characters, or with NUL or a lone surrogate, is 400 naming `key` (before the queue is looked up)', async () => {
    const { store, calls } = fakeStore({ orders: {} });
    const svc = new QueueKeysService(store);
    for (const key of ['', 'k'.repeat(129), 'a\u0000', '\ud800']) {
      for (const call of [() => svc.setOverride('orders', key, { concurrency: 1 }, 'default'), () => svc.deleteOverride('orders', key, 'default')]) {
        const e = await call().catch((x: unknown) => x);
        expect(e).toBeInstanceOf(ValidationError);
        expect((e as ValidationError).details).toEqual([{ path: 'key', message: expect.any(String) }]);
      }
    }
    expect(calls).toEqual([]);
    await expect(svc.setOverride('orders', 'k'.repeat(128), { concurrency: 1 }, 'default')).resolves.toMatchObject({ key: 'k'.repeat(128) });
  });

  it('set merges into the override and answers the key with its counts; delete answers overrides null and is idempotent', async () => {
    const { store, calls } = fakeStore({ orders: { settings: queueSettings, keys: keyed } });
    const svc = new QueueKeysService(store);
    expect(await svc.setOverride('orders', 'big', { concurrency: 7 }, 'default')).toEqual({
      key: 'big',
      waiting: 100,
      active: 2,
      overrides: { concurrency: 7, rateLimit: null },
      limits: { concurrency: 7, rateLimit: { max: 50, durationMs: 60_000 } },
    });
    expect(await svc.setOverride('orders', 'big', { rateLimit: { max: 3, durationMs: 10 } }, 'default')).toMatchObject({
      overrides: { concurrency: 7, rateLimit: { max: 3, durationMs: 10 } },
      limits: { concurrency: 7, rateLimit: { max: 3, durationMs: 10 } },
    });
    // Both cleared: no override left to show, the queue's limits apply.
    expect(await svc.setOverride('orders', 'big', { concurrency: null, rateLimit: null }, 'default')).toMatchObject({ overrides: null, limits: { concurrency: 2 } });
    // A key with no jobs (not among the store's keys) reads 0 and 0.
    expect(await svc.setOverride('orders', 'new/key é', { concurrency: 1 }, 'default')).toMatchObject({ key: 'new/key é', waiting: 0, active: 0, overrides: { concurrency: 1 } });
    const del = await svc.deleteOverride('orders', 'vip', 'default');
    expect(del).toEqual({ key: 'vip', waiting: 3, active: 1, overrides: null, limits: { concurrency: 2, rateLimit: { max: 50, durationMs: 60_000 } } });
    expect(await svc.deleteOverride('orders', 'vip', 'default')).toEqual(del);
    expect(calls.filter((c) => c.startsWith('delete'))).toEqual(['delete orders vip', 'delete orders vip']);
  });
});
