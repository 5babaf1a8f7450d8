import Redis, { Cluster } from 'ioredis';
import { CLUSTER_RETRY_MS, RedisScripts } from './scripts';

/**
 * RedisScripts.run on a Redis Cluster runs a script again when the reply
 * proves it did not run (MOVED, ASK, TRYAGAIN, CLUSTERDOWN), reading the slot
 * map first: after a failover ioredis hands such replies to the caller when
 * they come back in an auto-pipeline of several slots.
 */
describe('RedisScripts.run on a cluster', () => {
  const script = [{ name: 'claimJobs', numberOfKeys: 1, source: 'return 1' }];
  let clients: (Redis | Cluster)[] = [];
  afterEach(() => {
    clients.forEach((c) => c.disconnect());
    clients = [];
    jest.useRealTimers();
  });

  function cluster(replies: (() => Promise<unknown>)[]) {
    const c = new Cluster([{ host: '127.0.0.1', port: 1 }], { lazyConnect: true });
    clients.push(c);
    const scripts = new RedisScripts(c, script);
    const call = jest.fn(() => (replies.length > 1 ? replies.shift()! : replies[0])());
    (c as any).claimJobs = call;
    const refresh = jest.spyOn(c, 'refreshSlotsCache').mockImplementation(() => undefined);
    return { scripts, call, refresh };
  }

  it('runs the script again after MOVED, having asked for the slot map', async () => {
    const { scripts, call, refresh } = cluster([
      () => Promise.reject(new Error('MOVED 4088 127.0.0.1:7306')),
      () => Promise.reject(new Error('ASK 4088 127.0.0.1:7306')),
      () => Promise.resolve('ok'),
    ]);
    await expect(scripts.run('claimJobs', ['k'], [1])).resolves.toBe('ok');
    expect(call).toHaveBeenCalledTimes(3);
    expect(refresh).toHaveBeenCalledTimes(2);
    expect(call.mock.calls[2]).toEqual([['k', 1]]);
  });

  it('does not run it again after an error that leaves open whether it ran', async () => {
    const { scripts, call } = cluster([() => Promise.reject(new Error('Connection is closed.'))]);
    await expect(scripts.run('claimJobs', ['k'], [1])).rejects.toThrow('Connection is closed.');
    expect(call).toHaveBeenCalledTimes(1);
  });

  it(`gives the error to the caller once the slot has had no master for ${CLUSTER_RETRY_MS} ms`, async () => {
    jest.useFakeTimers();
    const { scripts, call } = cluster([() => Promise.reject(new Error('CLUSTERDOWN The cluster is down'))]);
    const p = scripts.run('claimJobs', ['k'], [1]);
    const settled = p.catch((e: Error) => e);
    await jest.advanceTimersByTimeAsync(CLUSTER_RETRY_MS + 500);
    expect(await settled).toEqual(new Error('CLUSTERDOWN The cluster is down'));
    expect(call.mock.calls.length).toBeGreaterThan(3);
  });

  it('a single node is not retried (no redirections there)', async () => {
    const r = new Redis({ host: '127.0.0.1', port: 1, lazyConnect: true });
    clients.push(r);
    const scripts = new RedisScripts(r, script);
    const call = jest.fn(() => Promise.reject(new Error('MOVED 1 127.0.0.1:2')));
    (r as any).eval = call;
    await expect(scripts.run('claimJobs', ['k'], [1])).rejects.toThrow('MOVED');
    expect(call).toHaveBeenCalledTimes(1);
  });
});
