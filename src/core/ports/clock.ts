/** Source of time for code that must be testable with a fake clock. */
export interface Clock {
  /** Epoch ms. */
  now(): number;
}

export const systemClock: Clock = { now: () => Date.now() };
