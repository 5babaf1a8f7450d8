import { randomBytes } from 'node:crypto';
import { Cluster, ReplyError } from 'ioredis';
import { sleep } from '../../core/sleep';
import type { RedisClient } from '../connection';

/** How long past its own timeout an XREAD BLOCK may stay unanswered before its connection is made again, ms. */
const XREAD_SLACK_MS = 2000;
/** Wait after a failed XREAD (connection trouble), or between reads where XREAD cannot be used (a Redis Cluster, a refused XREAD), ms. */
export const DOORBELL_POLL_MS = 5;
/** After Redis refused an XREAD (an ACL without it, a proxy without blocking reads), how long the writer polls before trying XREAD again, ms. */
const REFUSED_RETRY_MS = 60_000;
/** How long an aborted wait gives `CLIENT UNBLOCK` to end its XREAD before the connection is given up, ms. */
const UNBLOCK_MS = 200;

/**
 * The idle mirror writer's wait for new transition entries.
 *
 * Each read of a queue's stream that finds nothing new leaves the id of the
 * stream's newest entry (lua/readEvents-2.lua): every entry after it is new.
 * When every owned queue has such an id, one `XREAD BLOCK` over all their
 * streams from those ids, on a connection of its own, answers as soon as any
 * of them gets an entry — instead of a read of every queue every few ms,
 * which cost Redis a script call per queue 50 times a second while nothing
 * happened (100 idle queues: 5,000 calls/s, ~10 % of a Redis core, and the
 * writer thread ~5 % of a core). `COUNT 1`: it only rings — the entries
 * (a 1,000-job batch's are ~500 KB) come with the writer's read, not here
 * as well. XREAD leaves the consumer group alone: the
 * writer reads the entries it announced through the group as before.
 *
 * A queue read with entries (or not read at all) has no id: the wait returns
 * at once so the writer reads again. A Redis Cluster cannot XREAD streams of
 * several slots at once, and a Redis may refuse XREAD (an ACL, a proxy):
 * there the wait is a short sleep, as before (after a refusal XREAD is tried
 * again a minute later). A wait ended early (a new queue, stop) ends its
 * XREAD with `CLIENT UNBLOCK` from the shared connection and keeps the
 * connection. The blocking connection's id is asked for right before each
 * XREAD, and the UNBLOCK is sent only when that connection has not closed
 * since and the shared connection's Redis lists that id under the blocking
 * connection's own name (unique per connection): ids are never reused within
 * a Redis server's run, but a restart or a failover can put the two
 * connections on servers where the id is someone else's. Otherwise (or CLIENT
 * refused, or the XREAD not ended within UNBLOCK_MS) the connection is left to
 * finish its XREAD (≤ the wait) and close, and the next wait opens another.
 */
export class MirrorDoorbell {
  /** queue → newest entry id seen by a read that found nothing new. */
  private readonly tails = new Map<string, string>();
  private conn: RedisClient | null = null;
  /** The current blocking connection's name (CLIENT SETNAME), unique to it. */
  private connName = '';
  /** Closes of the current blocking connection so far (a reconnect gives it a new id). */
  private closes = 0;
  /** Until then (ms), XREAD is not tried: Redis refused the last one. */
  private refusedUntil = 0;

  /**
   * @param redis the shared connection (only checked for Cluster).
   * @param connect opens the doorbell's blocking connection (no auto-pipelining).
   * @param streamKeyOf a queue's events stream key.
   */
  constructor(
    private readonly redis: RedisClient,
    private readonly connect: (name: string) => RedisClient,
    private readonly streamKeyOf: (queue: string) => string,
  ) {}

  /** A read of `queue` came back: with nothing new (`tail`: the stream's newest id) or with entries (null). */
  saw(queue: string, tail: string | null): void {
    if (tail === null) this.tails.delete(queue);
    else this.tails.set(queue, tail);
  }

  /**
   * Waits until any of `queues`' streams gets an entry after the id its last
   * read left, for at most `timeoutMs` (≥ 1), or until `signal` aborts.
   * Never throws.
   * @returns true when something arrived or may have (a queue without an id: read it); false on timeout, abort or trouble.
   */
  async wait(queues: string[], timeoutMs: number, signal: AbortSignal): Promise<boolean> {
    if (signal.aborted) return false;
    const ids: string[] = [];
    for (const q of queues) {
      const id = this.tails.get(q);
      if (id === undefined) return true;
      ids.push(id);
    }
    // Queues no longer waited on (given up, deleted) leave the map.
    if (this.tails.size > ids.length) {
      const now = new Set(queues);
      for (const q of this.tails.keys()) if (!now.has(q)) this.tails.delete(q);
    }
    if (!queues.length) return this.pause(timeoutMs, signal).then(() => false);
    if (this.redis instanceof Cluster || Date.now() < this.refusedUntil)
      return this.pause(Math.min(timeoutMs, DOORBELL_POLL_MS), signal).then(() => true);
    const conn = this.conn ?? this.open();
    const ms = Math.max(1, Math.floor(timeoutMs));
    let timer: NodeJS.Timeout | undefined;
    let onAbort: (() => void) | undefined;
    // Aborted (the writer stops, or a new queue must be read at once): the
    // XREAD is unblocked and the connection kept; if that fails, the
    // connection is left to its pending XREAD (≤ ms) and then closed, and the
    // next wait opens one. Unanswered long after its timeout (a frozen node):
    // dropped at once. Left pending, either would hold the connection.
    // Asked right before the XREAD on the same connection: it answers at once.
    const idOf = (conn.client('ID') as Promise<number>).then(
      (id) => ({ id: Number(id), closes: this.closes }),
      () => null,
    );
    const read = conn.xread(
      'COUNT',
      1,
      'BLOCK',
      ms,
      'STREAMS',
      ...queues.map(this.streamKeyOf),
      ...ids,
    );
    const cut = new Promise<'late' | 'aborted'>((r) => {
      timer = setTimeout(() => r('late'), ms + XREAD_SLACK_MS);
      onAbort = () => r('aborted');
      signal.addEventListener('abort', onAbort, { once: true });
    });
    try {
      const r = await Promise.race([read, cut]);
      if (r === 'aborted' && (await this.unblock(idOf, read, this.connName))) return false;
      if (r === 'late' || r === 'aborted') {
        read.catch(() => undefined);
        this.drop(conn, r === 'aborted' ? ms + XREAD_SLACK_MS : 0);
        return false;
      }
      return r !== null;
    } catch (e) {
      if (e instanceof ReplyError) {
        // Redis answered, with a refusal: the connection is fine, XREAD is not
        // to be had here. Poll as before (XREAD tried again after
        // REFUSED_RETRY_MS) rather than open a connection per wait.
        this.refusedUntil = Date.now() + REFUSED_RETRY_MS;
        await this.pause(Math.min(timeoutMs, DOORBELL_POLL_MS), signal);
        return true;
      }
      this.drop(conn, 0);
      await this.pause(Math.min(timeoutMs, DOORBELL_POLL_MS), signal);
      return false;
    } finally {
      clearTimeout(timer);
      signal.removeEventListener('abort', onAbort!);
    }
  }

  /**
   * Ends a pending XREAD early: `CLIENT UNBLOCK <id>` on the shared
   * connection, after checking that `id` is still the blocking connection
   * (`name`) there; the XREAD then answers (nil) at once. The whole try takes
   * at most UNBLOCK_MS.
   * @returns true when the XREAD has answered (the connection is free for the next wait).
   */
  private async unblock(
    idOf: Promise<{ id: number; closes: number } | null>,
    read: Promise<unknown>,
    name: string,
  ): Promise<boolean> {
    let answered = false;
    const settled = read.then(
      () => (answered = true),
      () => false,
    );
    let timer: NodeJS.Timeout | undefined;
    const expired = new Promise<null>((r) => (timer = setTimeout(() => r(null), UNBLOCK_MS)));
    const within = <T>(p: Promise<T>): Promise<T | null> => Promise.race([p, expired]);
    try {
      const me = await within(idOf);
      if (!me || !Number.isSafeInteger(me.id) || me.closes !== this.closes) return answered;
      const listed = await within(
        this.redis.client('LIST', 'ID', String(me.id)) as Promise<string>,
      );
      if (typeof listed !== 'string' || !listed.includes(` name=${name} `)) return answered;
      const n = await within(this.redis.client('UNBLOCK', me.id) as Promise<number>);
      if (n === null) return false; // not answered in time: it could still end a later wait
      if (Number(n) !== 1) return answered; // not blocked (yet, or any more)
      return (await within(settled)) === true;
    } catch {
      return answered;
    } finally {
      clearTimeout(timer);
    }
  }

  /** Opens the blocking connection, named uniquely (the UNBLOCK check above relies on it). */
  private open(): RedisClient {
    const name = `sluice-audit-doorbell-${randomBytes(6).toString('hex')}`;
    const conn = this.connect(name);
    conn.on?.('close', () => {
      if (this.conn === conn) this.closes++;
    });
    this.conn = conn;
    this.connName = name;
    return conn;
  }

  /** Closes the blocking connection (the writer stopped); a later wait opens a new one. */
  close(): void {
    if (this.conn) this.drop(this.conn, XREAD_SLACK_MS);
  }

  /**
   * Stops using `conn`. With `graceMs` a ready connection gets QUIT, answered
   * after any pending XREAD (a connection cut mid-command leaves ioredis'
   * socket-timeout timer running for up to 30 s), and is cut after graceMs
   * all the same; otherwise it is cut now.
   */
  private drop(conn: RedisClient, graceMs: number): void {
    if (this.conn === conn) this.conn = null;
    if (graceMs <= 0 || conn.status !== 'ready') {
      conn.disconnect(false);
      return;
    }
    const cut = setTimeout(() => conn.disconnect(false), graceMs);
    cut.unref?.();
    conn.quit().then(
      () => clearTimeout(cut),
      () => undefined,
    );
  }

  private pause(ms: number, signal: AbortSignal): Promise<void> {
    return sleep(Math.max(1, ms), signal).catch(() => undefined);
  }
}
