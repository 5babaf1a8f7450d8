import { CHANGE_EVENTS, CHANGE_LOGS, CHANGE_PROGRESS, jobChangesMessage } from './job-changes';
import type { EventRow, LogRow } from './projection';

const ev = (jobId: string, event: string, to: string | null, at: number): EventRow => ({
  queue: 'q', streamMs: String(at), streamSeq: '0', jobId, at, event, from: null, to, attempt: 1, executionSeq: 1, workerId: null, reason: null, error: null, data: null,
});
const log = (jobId: string, at: number): LogRow => ({ queue: 'q', streamMs: String(at), streamSeq: '1', jobId, at, attempt: 1, level: 'info', message: 'm' });

describe('jobChangesMessage', () => {
  it('one entry per job: its newest status and time, and what changed', () => {
    const msg = jobChangesMessage({
      events: [ev('a', 'enqueued', 'waiting', 1), ev('a', 'claimed', 'active', 2), ev('a', 'progress', 'active', 3), ev('b', 'cancel_requested', 'active', 4), ev('a', 'completed', 'completed', 5)],
      logs: [log('a', 3), log('c', 6)],
    });
    expect(JSON.parse(msg as string)).toEqual([
      ['a', 'q', 'completed', 5, CHANGE_EVENTS | CHANGE_PROGRESS | CHANGE_LOGS],
      ['b', 'q', null, 4, CHANGE_EVENTS],
      ['c', 'q', null, 6, CHANGE_LOGS],
    ]);
  });

  it('null for a batch that changed nothing', () => {
    expect(jobChangesMessage({ events: [], logs: [] })).toBeNull();
  });

  it('costs little per event (1,000-event batch)', () => {
    const events = Array.from({ length: 1000 }, (_, i) => ev(`job-${i % 250}`, i % 4 === 0 ? 'enqueued' : 'claimed', 'active', i));
    for (let i = 0; i < 50; i++) jobChangesMessage({ events, logs: [] });
    const t0 = process.hrtime.bigint();
    for (let i = 0; i < 200; i++) jobChangesMessage({ events, logs: [] });
    const perBatchMs = Number(process.hrtime.bigint() - t0) / 1e6 / 200;
    expect(perBatchMs).toBeLessThan(5);
  });
});
