import type { JobStore, QueueStore } from '../core/ports';
import { forEachQueue } from './each-queue';
import { promoteDueJobs } from './promoter';
import { reapExpiredLeases } from './reaper';

describe('forEachQueue', () => {
  it('goes on past a queue that fails, then throws naming it', async () => {
    const seen: string[] = [];
    await expect(
      forEachQueue(['a', 'b', 'c'], async (q) => {
        seen.push(q);
        if (q === 'a') throw new Error('Connection is closed.');
      }),
    ).rejects.toThrow(/^1 of 3 queues failed \(a\): Connection is closed\.$/);
    expect(seen).toEqual(['a', 'b', 'c']);
  });

  it('resolves when every queue succeeds', async () => {
    await expect(forEachQueue(['a', 'b'], async () => undefined)).resolves.toBeUndefined();
  });
});

describe('reaper and promoter with one queue on a shard that is down', () => {
  // Queue `down` lives on a Redis Cluster shard whose master just died.
  const stores = () => {
    const jobs = {
      reapExpired: jest.fn(async (q: string) => {
        if (q === 'down') throw new Error('Connection is closed.');
        return { reaped: 2, nextInMs: -1 };
      }),
      promoteDelayed: jest.fn(async (q: string) => {
        if (q === 'down') throw new Error('Connection is closed.');
        return { promoted: 3, nextInMs: -1 };
      }),
    };
    const queues = { list: async () => ['down', 'up1', 'up2'] };
    return { jobs: jobs as unknown as JobStore, queues: queues as unknown as QueueStore, mock: jobs };
  };

  it('the reaper reaps the other queues, then reports the failed one', async () => {
    const s = stores();
    const reaped: [string, number][] = [];
    await expect(reapExpiredLeases(s, (q, n) => reaped.push([q, n]))).rejects.toThrow(/queues failed \(down\)/);
    expect(reaped).toEqual([
      ['up1', 2],
      ['up2', 2],
    ]);
  });

  it('the promoter promotes on the other queues, then reports the failed one', async () => {
    const s = stores();
    await expect(promoteDueJobs(s)).rejects.toThrow(/queues failed \(down\)/);
    expect(s.mock.promoteDelayed.mock.calls.map((c) => c[0])).toEqual(['down', 'up1', 'up2']);
  });
});
