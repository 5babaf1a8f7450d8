import { Cluster } from 'ioredis';
import type { RedisClient } from '../redis/connection';

/**
 * Blocks until a queue's wake list gets a token or a timeout passes.
 *
 * Single node: one BLPOP over every served queue's wake key on a dedicated
 * connection. Redis Cluster: BLPOP keys must share a slot, so each queue gets
 * its own blocking connection; a pending BLPOP that did not win the race is
 * kept and reused by the next wait, so no token is swallowed.
 */
export class WakeWaiter {
  private single: RedisClient | null = null;
  private readonly perQueue = new Map<string, { conn: RedisClient; pending: Promise<unknown> | null }>();
  private closed = false;

  constructor(private readonly makeConnection: () => RedisClient, private readonly isCluster: boolean) {}

  /**
   * Waits for a token on any of `wakeKeys` (queue name → key) for at most
   * `timeoutMs` (≥ 1). Resolves true when woken, false on timeout or close.
   */
  async wait(wakeKeys: Map<string, string>, timeoutMs: number): Promise<boolean> {
    if (this.closed || wakeKeys.size === 0) return false;
    const seconds = Math.max(0.001, timeoutMs / 1000).toFixed(3);
    try {
      if (!this.isCluster) {
        if (!this.single) this.single = this.makeConnection();
        const r = await this.single.blpop(...[...wakeKeys.values()], seconds);
        return r !== null;
      }
      return await this.waitCluster(wakeKeys, timeoutMs);
    } catch {
      // Connection closed (shutdown) or dropped: the caller polls again.
      return false;
    }
  }

  private async waitCluster(wakeKeys: Map<string, string>, timeoutMs: number): Promise<boolean> {
    const races: Promise<boolean>[] = [];
    for (const [queue, key] of wakeKeys) {
      let w = this.perQueue.get(queue);
      if (!w) {
        w = { conn: this.makeConnection(), pending: null };
        this.perQueue.set(queue, w);
      }
      const slot = w;
      if (!slot.pending) {
        // Long server-side timeout; the race below bounds our wait.
        slot.pending = slot.conn.blpop(key, 5).finally(() => {
          slot.pending = null;
        });
      }
      races.push(slot.pending.then((r) => r !== null, () => false));
    }
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<boolean>((r) => (timer = setTimeout(() => r(false), timeoutMs)));
    try {
      return await Promise.race([...races, timeout]);
    } finally {
      clearTimeout(timer);
    }
  }

  /** Interrupts any wait and closes the blocking connections. */
  close(): void {
    this.closed = true;
    this.single?.disconnect();
    for (const w of this.perQueue.values()) w.conn.disconnect();
  }
}

export function isCluster(client: RedisClient): boolean {
  return client instanceof Cluster;
}
