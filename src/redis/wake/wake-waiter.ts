import { Cluster } from 'ioredis';
import { WakeWaiter } from '../../core/ports/wake';
import type { RedisClient } from '../connection';

/** How long past its own timeout a BLPOP may stay unanswered before its connection is made again, ms. */
const BLPOP_SLACK_MS = 2000;

/**
 * Blocks until a queue's wake list gets a token or a timeout passes.
 *
 * Single node: one BLPOP over every served queue's wake key on a dedicated
 * connection. Redis Cluster: BLPOP keys must share a slot, so each queue gets
 * its own blocking connection; a pending BLPOP that did not win the race is
 * kept and reused by the next wait, and a token it takes while nobody waits
 * (the worker is claiming) is remembered for the next wait, so no token is
 * swallowed.
 */
export class RedisWakeWaiter implements WakeWaiter {
  private single: RedisClient | null = null;
  private readonly perQueue = new Map<string, { conn: RedisClient; pending: Promise<void> | null; woken: boolean }>();
  private closed = false;
  private readonly sleepers = new Set<() => void>();

  /**
   * @param makeConnection a new blocking connection (no auto-pipelining).
   * @param wakeKeyOf the wake list of a queue (src/redis/keys.ts).
   */
  constructor(
    private readonly makeConnection: () => RedisClient,
    private readonly isCluster: boolean,
    private readonly wakeKeyOf: (queue: string) => string,
  ) {}

  /**
   * Waits for a token on any of `queues`' wake lists for at most `timeoutMs`
   * (≥ 1). Resolves true when woken, false on timeout or close.
   */
  wait(queues: string[], timeoutMs: number): Promise<boolean> {
    return this.waitKeys(new Map(queues.map((q) => [q, this.wakeKeyOf(q)])), timeoutMs);
  }

  /**
   * Waits for a token on any of `wakeKeys` (queue name → key) for at most
   * `timeoutMs` (≥ 1). Resolves true when woken, false on timeout or close.
   */
  private async waitKeys(wakeKeys: Map<string, string>, timeoutMs: number): Promise<boolean> {
    if (this.closed) return false;
    if (wakeKeys.size === 0) {
      // Nothing to block on yet (QUEUES=* before any queue exists, or only
      // external queues): sleep instead of returning at once, which would
      // spin the claim loop on the CPU.
      await new Promise<void>((res) => {
        const done = () => {
          clearTimeout(timer);
          this.sleepers.delete(done);
          res();
        };
        const timer = setTimeout(done, timeoutMs);
        this.sleepers.add(done);
      });
      return false;
    }
    const seconds = Math.max(0.001, timeoutMs / 1000).toFixed(3);
    try {
      if (!this.isCluster) {
        if (!this.single) this.single = this.makeConnection();
        const conn = this.single;
        let timer: NodeJS.Timeout | undefined;
        // Redis answers a BLPOP by its timeout: one that has not answered
        // BLPOP_SLACK_MS later is on a node that stopped answering without
        // closing the connection (a frozen or partitioned master), or was
        // sent again after a reconnect. Drop that connection (its BLPOP goes
        // with it: left pending, it would hold the connection and take the
        // next wake token for nobody) and block on a new one next time
        // (with Sentinel: on the new master); the worker claims meanwhile.
        const late = new Promise<'late'>((r) => (timer = setTimeout(() => r('late'), timeoutMs + BLPOP_SLACK_MS)));
        const r = await Promise.race([conn.blpop(...[...wakeKeys.values()], seconds), late]).finally(() => clearTimeout(timer));
        if (r === 'late') {
          if (this.single === conn) this.single = null;
          conn.disconnect(false);
          return false;
        }
        return r !== null;
      }
      return await this.waitCluster(wakeKeys, timeoutMs);
    } catch {
      // Connection closed (shutdown) or dropped: the caller polls again.
      return false;
    }
  }

  private async waitCluster(wakeKeys: Map<string, string>, timeoutMs: number): Promise<boolean> {
    const slots: { key: string; w: { conn: RedisClient; pending: Promise<void> | null; woken: boolean } }[] = [];
    let woken = false;
    for (const [queue, key] of wakeKeys) {
      let w = this.perQueue.get(queue);
      if (!w) {
        w = { conn: this.makeConnection(), pending: null, woken: false };
        this.perQueue.set(queue, w);
      }
      // A token taken by a pending BLPOP since the last wait: consume it, do not block.
      if (w.woken) {
        w.woken = false;
        woken = true;
      }
      slots.push({ key, w });
    }
    if (woken) return true;
    let done = false;
    const races: Promise<boolean>[] = slots.map(({ key, w }) => {
      if (!w.pending) {
        // Long server-side timeout; the race below bounds our wait.
        w.pending = w.conn.blpop(key, 5).then(
          (r) => {
            w.pending = null;
            if (r !== null) w.woken = true;
          },
          () => {
            w.pending = null;
          },
        );
      }
      // Once this wait is over, a late token stays in `woken` for the next one.
      return w.pending.then(() => {
        if (done || !w.woken) return false;
        w.woken = false;
        return true;
      });
    });
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<boolean>((r) => (timer = setTimeout(() => r(false), timeoutMs)));
    try {
      return await Promise.race([...races, timeout]);
    } finally {
      done = true;
      clearTimeout(timer);
    }
  }

  /** Interrupts any wait and closes the blocking connections. */
  close(): void {
    this.closed = true;
    for (const wake of [...this.sleepers]) wake();
    this.single?.disconnect();
    for (const w of this.perQueue.values()) w.conn.disconnect();
  }
}

export function isCluster(client: RedisClient): boolean {
  return client instanceof Cluster;
}
