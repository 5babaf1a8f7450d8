import { WakeHub } from '../../core/ports/wake';
import type { RedisClient } from '../connection';

/** Server-side BLPOP timeout, s: how soon a queue's loop notices that nobody waits any more. */
const BLOCK_SECONDS = 1;
/** An idle blocking connection is closed after this long without waiters, ms. */
const IDLE_CLOSE_MS = 30_000;
/** Wait cap when no blocking connection is available (over the cap, or Redis trouble): poll this often, ms. */
export const FALLBACK_POLL_MS = 250;

interface Waiter {
  wake(): void;
}

interface QueueWait {
  key: string;
  conn: RedisClient;
  /** FIFO: one wake token wakes the longest-waiting request. */
  waiters: Waiter[];
  looping: boolean;
  idleTimer?: NodeJS.Timeout;
}

/**
 * Wake-ups for the long polls of the external claim endpoint, without
 * blocking the shared Redis connection.
 *
 * Per queue that has waiting requests in this process, one dedicated
 * connection BLPOPs the queue's wake list (the list enqueue, retry, resume
 * and promotion push to; see lua/includes/wake.lua) and hands each token to
 * one waiter, oldest first; that waiter then claims. A token that arrives
 * when nobody waits any more is pushed back, so an in-process worker or
 * another API replica blocked on the same list still gets it. At most
 * `maxConnections` queues get a connection; waiters on other queues poll
 * every {@link FALLBACK_POLL_MS}.
 */
export class RedisWakeHub implements WakeHub {
  private readonly queues = new Map<string, QueueWait>();
  private closed = false;

  /**
   * @param makeConnection a new blocking connection (no auto-pipelining).
   * @param pushBack re-pushes a token onto a wake list (shared connection).
   * @param wakeKeyOf the wake list of a queue (src/redis/keys.ts).
   */
  constructor(
    private readonly makeConnection: () => RedisClient,
    private readonly pushBack: (wakeKey: string) => Promise<unknown>,
    private readonly wakeKeyOf: (queue: string) => string,
    private readonly maxConnections = 64,
  ) {}

  get isClosed(): boolean {
    return this.closed;
  }

  /**
   * Waits for a wake token of `queue`, at most `timeoutMs`.
   * @returns true when woken by a token; false on timeout, abort or close.
   */
  wait(queue: string, timeoutMs: number, signal: AbortSignal): Promise<boolean> {
    if (this.closed || signal.aborted) return Promise.resolve(false);
    const q = this.queueWait(queue, this.wakeKeyOf(queue));
    const ms = q ? timeoutMs : Math.min(timeoutMs, FALLBACK_POLL_MS);
    return new Promise<boolean>((resolve) => {
      let done = false;
      const finish = (woken: boolean) => {
        if (done) return;
        done = true;
        clearTimeout(timer);
        signal.removeEventListener('abort', onAbort);
        if (q) {
          const i = q.waiters.indexOf(waiter);
          if (i >= 0) q.waiters.splice(i, 1);
        }
        resolve(woken);
      };
      const onAbort = () => finish(false);
      const waiter: Waiter = { wake: () => finish(true) };
      const timer = setTimeout(() => finish(false), Math.max(1, ms));
      signal.addEventListener('abort', onAbort, { once: true });
      if (q) {
        q.waiters.push(waiter);
        if (!q.looping) void this.loop(queue, q);
      }
    });
  }

  /** Ends every wait (false) and closes the blocking connections. */
  close(): void {
    this.closed = true;
    for (const q of this.queues.values()) {
      for (const w of [...q.waiters]) w.wake();
      clearTimeout(q.idleTimer);
      q.conn.disconnect();
    }
    this.queues.clear();
  }

  /** Waiting requests per queue (for tests and metrics). */
  waiting(queue: string): number {
    return this.queues.get(queue)?.waiters.length ?? 0;
  }

  private queueWait(queue: string, key: string): QueueWait | null {
    let q = this.queues.get(queue);
    if (!q) {
      if (this.queues.size >= this.maxConnections) return null;
      q = { key, conn: this.makeConnection(), waiters: [], looping: false };
      this.queues.set(queue, q);
    }
    clearTimeout(q.idleTimer);
    q.idleTimer = undefined;
    return q;
  }

  private async loop(queue: string, q: QueueWait): Promise<void> {
    q.looping = true;
    try {
      while (!this.closed && q.waiters.length > 0) {
        let token: [string, string] | null = null;
        try {
          token = await q.conn.blpop(q.key, BLOCK_SECONDS);
        } catch {
          // Connection trouble or closed: the waiters' own timers bound their wait.
          if (this.closed) return;
          await new Promise((r) => setTimeout(r, FALLBACK_POLL_MS));
          continue;
        }
        if (token === null) continue;
        const w = q.waiters.shift();
        if (w) w.wake();
        // Everybody left while we were blocked: the token belongs to someone else.
        else await this.pushBack(q.key).catch(() => undefined);
      }
    } finally {
      q.looping = false;
    }
    if (this.closed) return;
    q.idleTimer = setTimeout(() => {
      if (q.waiters.length > 0 || q.looping) return;
      this.queues.delete(queue);
      q.conn.disconnect();
    }, IDLE_CLOSE_MS);
    q.idleTimer.unref?.();
  }
}
