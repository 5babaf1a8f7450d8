import { flowStatus, statusCounts } from './flow-status';

describe('flowStatus', () => {
  it.each([
    [['completed', 'completed'], 'completed'],
    [['completed', 'blocked'], 'running'],
    [['failed', 'active'], 'running'],
    [['failed', 'cancelled', 'completed'], 'failed'],
    [['cancelled', 'completed'], 'cancelled'],
    [['waiting'], 'running'],
    [['completed', null], 'completed'],
  ] as const)('%j → %s', (statuses, want) => {
    expect(flowStatus([...statuses])).toBe(want);
  });

  it('counts every status, 0 included', () => {
    expect(statusCounts(['blocked', 'blocked', 'completed', null])).toEqual({ waiting: 0, delayed: 0, active: 0, completed: 1, failed: 0, cancelled: 0, blocked: 2 });
  });
});
