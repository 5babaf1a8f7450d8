import { LiveEvents } from '../../core/ports/live-events';
import type { Subscription } from '../../core/ports/subscription';
import type { RedisClient } from '../connection';
import { jobChangesChannel, liveListenersKey } from '../keys';

/**
 * {@link LiveEvents} over Redis: pub/sub on `<prefix>:jobs:changed`, and the
 * presence key `<prefix>:live:listeners` (set with an expiry).
 */
export class RedisLiveEvents implements LiveEvents {
  constructor(
    private readonly redis: RedisClient,
    private readonly prefix: string,
  ) {}

  subscribe(onMessage: (message: string) => void): Subscription {
    const sub = this.redis.duplicate() as RedisClient;
    sub.on('error', () => undefined); // reconnects by itself; clients poll meanwhile
    sub.on('message', (_channel: string, msg: string) => onMessage(msg));
    void sub.subscribe(jobChangesChannel(this.prefix)).catch(() => undefined);
    return { close: () => sub.disconnect() };
  }

  async publish(message: string): Promise<void> {
    await this.redis.publish(jobChangesChannel(this.prefix), message);
  }

  async markListening(ttlMs: number): Promise<void> {
    await this.redis.set(liveListenersKey(this.prefix), '1', 'PX', ttlMs);
  }

  async hasListeners(): Promise<boolean> {
    return (await this.redis.exists(liveListenersKey(this.prefix))) === 1;
  }
}
