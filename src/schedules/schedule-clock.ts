/**
 * Injection token of the Clock (src/core/ports.ts) the schedule code reads:
 * systemClock in production, a fake one in tests that drive time.
 */
export const SCHEDULE_CLOCK = Symbol('SCHEDULE_CLOCK');
