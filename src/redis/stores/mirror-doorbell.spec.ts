import { ReplyError } from 'ioredis';
import type { RedisClient } from '../connection';
import { MirrorDoorbell } from './mirror-doorbell';

/**
 * A blocking connection whose XREAD does what `xread` says (its CLIENT ID is
 * 7); counts connections made. `shared` stands for the shared connection
 * (CLIENT UNBLOCK goes there).
 */
function doorbellWith(xread: () => Promise<unknown>, shared: object = {}) {
  const made: { name: string; disconnected: boolean; close: () => void }[] = [];
  const connect = (name: string) => {
    const onClose: (() => void)[] = [];
    const c = {
      name,
      status: 'ready',
      disconnected: false,
      xread,
      client: () => Promise.resolve(7),
      on: (ev: string, f: () => void) => void (ev === 'close' && onClose.push(f)),
      close: () => onClose.forEach((f) => f()),
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

  /**
   * A shared connection on the blocking connection's Redis: CLIENT LIST ID
   * shows id 7 under the name `name()` gives; UNBLOCK answers 1 and `release`s
   * the blocked XREAD. Every CLIENT call is recorded in `asked`.
   */
  const sharedFor = (name: () => string, release: () => void, asked: unknown[][] = []) => ({
    client: (...a: unknown[]) => {
      asked.push(a);
      if (a[0] === 'LIST')
        return Promise.resolve(`id=7 addr=127.0.0.1:5 fd=9 name=${name()} age=1 cmd=xread\n`);
      release();
      return Promise.resolve(1);
    },
  });
  const tick = (ms = 5) => new Promise((r) => setTimeout(r, ms));

  /** Starts a wait and aborts it after `before()`; then starts and aborts another (made: did it need a connection of its own?). */
  async function abortOnce(bell: MirrorDoorbell, before: () => void = () => undefined) {
    const ac = new AbortController();
    const waited = bell.wait(['a', 'b'], 1000, ac.signal);
    await tick();
    before();
    const t0 = Date.now();
    ac.abort();
    const r = await waited;
    const ms = Date.now() - t0;
    const again = new AbortController();
    const next = bell.wait(['a', 'b'], 1000, again.signal);
    again.abort();
    await next;
    return { r, ms };
  }

  it('a wait ended early unblocks its XREAD and keeps the connection for the next wait', async () => {
    let release: ((v: null) => void) | null = null;
    const asked: unknown[][] = [];
    const held: { made?: { name: string }[] } = {};
    const shared = sharedFor(
      () => held.made?.[0]?.name ?? '',
      () => release?.(null),
      asked,
    );
    const { bell, made } = doorbellWith(() => new Promise((r) => (release = r)), shared);
    held.made = made;
    for (let i = 0; i < 5; i++) {
      const ac = new AbortController();
      const waited = bell.wait(['a', 'b'], 1000, ac.signal);
      await tick();
      ac.abort();
      expect(await waited).toBe(false);
    }
    expect(asked.filter((a) => a[0] === 'UNBLOCK')).toEqual(
      Array.from({ length: 5 }, () => ['UNBLOCK', 7]),
    );
    expect(asked.filter((a) => a[0] === 'LIST')).toEqual(
      Array.from({ length: 5 }, () => ['LIST', 'ID', '7']),
    );
    expect(made).toHaveLength(1);
    expect(made[0].name).toMatch(/^sluice-audit-doorbell-[0-9a-f]{12}$/);
    expect(made[0].disconnected).toBe(false);
  });

  it('does not UNBLOCK an id listed under another name (a restart, a failover): gives the connection up at once', async () => {
    const asked: unknown[][] = [];
    const shared = sharedFor(
      () => 'sluice-audit-doorbell-someone-else',
      () => undefined,
      asked,
    );
    const { bell, made } = doorbellWith(() => new Promise(() => undefined), shared);
    const { r, ms } = await abortOnce(bell);
    expect(r).toBe(false);
    expect(ms).toBeLessThan(100); // no wait for an XREAD nobody ended
    expect(asked.filter((a) => a[0] === 'UNBLOCK')).toEqual([]);
    expect(made).toHaveLength(2); // the next wait had a connection of its own
  });

  it('does not UNBLOCK once its connection closed after the id was asked (a reconnect gives a new id)', async () => {
    const asked: unknown[][] = [];
    const held: { made?: { name: string }[] } = {};
    const shared = sharedFor(
      () => held.made?.[0]?.name ?? '',
      () => undefined,
      asked,
    );
    const { bell, made } = doorbellWith(() => new Promise(() => undefined), shared);
    held.made = made;
    const { r } = await abortOnce(bell, () => made[0].close());
    expect(r).toBe(false);
    expect(asked.filter((a) => a[0] === 'UNBLOCK')).toEqual([]);
    expect(made).toHaveLength(2);
  });

  it('an UNBLOCK not answered within 200 ms counts as failed (it could end the next wait)', async () => {
    const held: { made?: { name: string }[] } = {};
    const shared = {
      // A slow shared connection: the UNBLOCK answers after 400 ms.
      client: (...a: unknown[]) =>
        a[0] === 'LIST'
          ? Promise.resolve(`id=7 name=${held.made?.[0]?.name} age=1\n`)
          : new Promise((r) => setTimeout(() => r(1), 400)),
    };
    const { bell, made } = doorbellWith(() => new Promise(() => undefined), shared);
    held.made = made;
    const { r, ms } = await abortOnce(bell);
    expect(r).toBe(false);
    expect(ms).toBeGreaterThanOrEqual(190);
    expect(ms).toBeLessThan(400);
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
