import { ReplyError } from 'ioredis';
import type { RedisClient } from '../connection';
import { MirrorDoorbell } from './mirror-doorbell';

/** A blocking connection whose XREAD does what `xread` says; counts connections made. */
function doorbellWith(xread: () => Promise<unknown>) {
  const made: { disconnected: boolean }[] = [];
  const connect = () => {
    const c = {
      status: 'ready',
      disconnected: false,
      xread,
      disconnect: () => void (c.disconnected = true),
      quit: () => Promise.resolve('OK'),
    };
    made.push(c);
    return c as unknown as RedisClient;
  };
  const bell = new MirrorDoorbell({} as RedisClient, connect, (q) => `s:${q}`);
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
});
