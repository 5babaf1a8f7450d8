import type { Subscription } from './subscription';

/**
 * Change notices from the API to the schedulers (src/schedules): fire and
 * forget, so a notice may be lost (the schedulers also reload periodically).
 * Implemented by `src/redis/stores/schedule-signals.ts` (pub/sub).
 */
export abstract class ScheduleSignals {
  /**
   * Announces that a schedule changed.
   * @throws the store's error when it cannot be reached.
   */
  abstract announce(scheduleId: string): Promise<void>;
  /**
   * Calls `onChange` on each notice, on a connection of its own, until closed.
   * Never rejects: a failed subscribe is left to the periodic reload.
   */
  abstract listen(onChange: (scheduleId: string) => void): Promise<Subscription>;
}
