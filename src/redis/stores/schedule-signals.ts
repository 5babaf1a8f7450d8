import { ScheduleSignals } from '../../core/ports/schedules';
import type { Subscription } from '../../core/ports/subscription';
import type { RedisClient } from '../connection';
import { schedulesChannel } from '../keys';

/** Opens a connection of its own for a subscriber (pub/sub holds the connection). */
export type SubscriberFactory = (name: string) => RedisClient;

/** {@link ScheduleSignals} over Redis pub/sub, on the channel `<prefix>:schedules`. */
export class RedisScheduleSignals implements ScheduleSignals {
  constructor(
    private readonly redis: RedisClient,
    private readonly prefix: string,
    private readonly connect: SubscriberFactory,
  ) {}

  async announce(scheduleId: string): Promise<void> {
    await this.redis.publish(schedulesChannel(this.prefix), scheduleId);
  }

  async listen(onChange: (scheduleId: string) => void): Promise<Subscription> {
    const sub = this.connect('sluice-schedules');
    sub.on('message', (_channel: string, msg: string) => onChange(msg));
    // A notice lost while (re)subscribing is covered by the periodic reload.
    await sub.subscribe(schedulesChannel(this.prefix)).catch(() => undefined);
    return { close: () => sub.disconnect() };
  }
}
