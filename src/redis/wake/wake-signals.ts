import { WakeSignals } from '../../core/ports/wake';
import { RedisClient } from '../connection';
import type { RedisContext } from '../context';
import { cancelChannel } from '../keys';
import { RedisWakeHub } from './wake-hub';
import { RedisWakeWaiter } from './wake-waiter';

/**
 * {@link WakeSignals} over Redis: BLPOP on each queue's wake list (pushed by
 * lua/includes/wake.lua) and the `<prefix>:cancel` pub/sub channel
 * (lua/cancelJob-4.lua publishes on it).
 */
export class RedisWakeSignals implements WakeSignals {
  private hubInstance: RedisWakeHub | null = null;
  private hubConnections = 0;

  /**
   * @param connect a new blocking connection (no auto-pipelining) labelled `name`.
   * @param isCluster a cluster needs one blocking connection per queue (BLPOP keys share a slot).
   */
  constructor(
    private readonly ctx: RedisContext,
    private readonly connect: (name: string) => RedisClient,
    private readonly isCluster: boolean,
  ) {}

  waiter(name: string): RedisWakeWaiter {
    return new RedisWakeWaiter(() => this.connect(name), this.isCluster, (q) => this.ctx.keys(q).wake);
  }

  hub(): RedisWakeHub {
    this.hubInstance ??= new RedisWakeHub(
      () => this.connect(`sluice-longpoll-${process.pid}-${++this.hubConnections}`),
      (key) => this.ctx.redis.rpush(key, 1),
      (q) => this.ctx.keys(q).wake,
    );
    return this.hubInstance;
  }

  async subscribeCancels(name: string, fn: (jobId: string) => void): Promise<() => void> {
    const sub = this.connect(name);
    sub.on('message', (_channel: string, jobId: string) => fn(jobId));
    try {
      await sub.subscribe(cancelChannel(this.ctx.prefix));
    } catch (e) {
      sub.disconnect();
      throw e;
    }
    return () => sub.disconnect();
  }
}
