import { ReplyError } from 'ioredis';
import type { RedisClient } from '../connection';
import { MirrorDoorbell } from './mirror-doorbell';

/**
 * A blocking connection whose XREAD does what `xread` says (its CLIENT ID is
 * 7); counts connections made. `shared` stands for the shared connection
 * (CLIENT UNBLOCK goes there).
 */
function doorbellWith(xread: () => Promise<unknown>, shared: object = {}) {
  const made: { disconnected: boolean }[] = [];
  const connect = () => {
    const c = {
      status: 'ready',
      disconnected: false,
      xread,
      client: () => Promise.resolve(7),
      disconnect: () => void (c.disconnected = true),
      quit: () => Promise.resolve('OK'),
    };
    made.push(c);
    return c as unknown as RedisClient;
  };
  const bell = new MirrorDoorbell(shared as RedisClient, connect, (q) => `s:${q}`);
  for (const q of ['a', 'b']) bell.saw(q, '1-0');
  return { bell, made };
}

describe('MirrorDoorbell', () => {
  it('a refused XREAD (ACL, proxy) keeps its connection and polls instead of opening one per wait', async () => {
    let calls = 0;
    const { bell, made } = doorbellWith(() => {
      calls++;
      return Promise.reject(
        new ReplyError("NOPERM this user has no permissions to run the 'xread' command"),
      );
    });
    const signal = new AbortController().signal;
    for (let i = 0; i < 20; i++) expect(await bell.wait(['a', 'b'], 1000, signal)).toBe(true);
    expect(made).toHaveLength(1);
    expect(made[0].disconnected).toBe(false);
    expect(calls).toBe(1); // not tried again within REFUSED_RETRY_MS
  });

  it('a connection failure drops the connection: the next wait opens a new one', async () => {
    const { bell, made } = doorbellWith(() => Promise.reject(new Error('Connection is closed.')));
    const signal = new AbortController().signal;
    expect(await bell.wait(['a', 'b'], 1000, signal)).toBe(false);
    expect(await bell.wait(['a', 'b'], 1000, signal)).toBe(false);
    expect(made).toHaveLength(2);
    expect(made[0].disconnected).toBe(true);
  });

  it('a queue without a known tail is read, not waited for', async () => {
    const { bell, made } = doorbellWith(() => new Promise(() => undefined));
    bell.saw('b', null);
    expect(await bell.wait(['a', 'b'], 1000, new AbortController().signal)).toBe(true);
    expect(made).toHaveLength(0);
  });

  it('a wait ended early unblocks its XREAD and keeps the connection for the next wait', async () => {
    let release: ((v: null) => void) | null = null;
    const unblocked: unknown[] = [];
    const shared = {
      client: (...a: unknown[]) => {
        unblocked.push(a);
        release?.(null); // Redis answers the blocked XREAD with nil
        return Promise.resolve(1);
      },
    };
    const { bell, made } = doorbellWith(() => new Promise((r) => (release = r)), shared);
    for (let i = 0; i < 5; i++) {
      const ac = new AbortController();
      const waited = bell.wait(['a', 'b'], 1000, ac.signal);
      await new Promise((r) => setTimeout(r, 5));
      ac.abort();
      expect(await waited).toBe(false);
    }
    expect(unblocked).toEqual(Array.from({ length: 5 }, () => ['UNBLOCK', 7]));
    expect(made).toHaveLength(1);
    expect(made[0].disconnected).toBe(false);
  });

  it('an XREAD that CLIENT UNBLOCK does not end (another node, CLIENT refused) gives its connection up', async () => {
    const shared = { client: () => Promise.resolve(0) }; // no such client blocked there
    const { bell, made } = doorbellWith(() => new Promise(() => undefined), shared);
    const ac = new AbortController();
    const waited = bell.wait(['a', 'b'], 1000, ac.signal);
    await new Promise((r) => setTimeout(r, 5));
    const t0 = Date.now();
    ac.abort();
    expect(await waited).toBe(false);
    expect(Date.now() - t0).toBeLessThan(600);
    const again = new AbortController();
    const next = bell.wait(['a', 'b'], 1000, again.signal);
    again.abort();
    await next;
    expect(made).toHaveLength(2);
  });

  it('forgets the tails of queues no longer waited on', async () => {
    const { bell } = doorbellWith(() => new Promise(() => undefined));
    bell.saw('c', '2-0');
    const ac = new AbortController();
    const waited = bell.wait(['a'], 1000, ac.signal);
    ac.abort();
    await waited;
    expect([...(bell as unknown as { tails: Map<string, string> }).tails.keys()]).toEqual(['a']);
  });
});
