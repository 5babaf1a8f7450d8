import { describe, expect, it } from 'vitest';
import type { Queue, Stats, Worker } from '../../api/types';
import { needsAttention, STALL_MS } from './attention';

const counts = { waiting: 0, delayed: 0, active: 0, completed: 0, failed: 0, cancelled: 0 };
const q = (over: Partial<Queue> & { c?: Partial<typeof counts> } = {}): Queue => ({
  name: 'q',
  paused: false,
  maxConcurrency: null,
  rateLimit: null,
  defaults: { maxAttempts: 3, backoff: { type: 'fixed', delayMs: 1, maxDelayMs: 1, jitter: 'none' }, timeoutMs: 1 },
  external: false,
  payloadSearch: false,
  keyConcurrency: null,
  keyRateLimit: null,
  fairness: 'fifo',
  agingMs: null,
  counts: { ...counts, ...over.c },
  ...over,
});
const stats = (failedPerMin: number): Stats => ({ queues: {}, totals: { ...counts, failed: 7 }, workers: { active: 1, total: 1 }, throughput: { completedPerMin: 0, failedPerMin }, auditLagMs: 0 });
const worker = (status: Worker['status']): Worker => ({ id: `w-${status}`, hostname: 'h', pid: 1, queues: ['*'], concurrency: 10, active: 0, startedAt: '', lastHeartbeatAt: '2026-12-01T00:00:00Z', status, kind: 'process', lastClaimAt: null, jobs: [] });

describe('needs attention', () => {
  it('nothing when all is well', () => {
    expect(needsAttention(stats(0), [q({ c: { waiting: 3, active: 2 } })], [worker('running')], { q: 90_000 })).toEqual([]);
  });
  it('a growing DLQ', () => {
    expect(needsAttention(stats(4), [], [worker('running')], {}).map((a) => a.key)).toEqual(['dlq']);
  });
  it('a stalled queue: waiting, nothing active, oldest older than the threshold; not when paused or young', () => {
    expect(needsAttention(stats(0), [q({ c: { waiting: 3 } })], [worker('running')], { q: STALL_MS + 1 }).map((a) => a.key)).toEqual(['stall-q']);
    expect(needsAttention(stats(0), [q({ c: { waiting: 3 } })], [worker('running')], { q: STALL_MS - 1 })).toEqual([]);
    expect(needsAttention(stats(0), [q({ paused: true, c: { waiting: 3 } })], [worker('running')], { q: STALL_MS + 1 })).toEqual([]);
    // Latency unknown (/metrics closed): stalled only when no worker is alive.
    expect(needsAttention(stats(0), [q({ c: { waiting: 3 } })], [worker('dead')], null).map((a) => a.key)).toEqual(['stall-q', 'dead-w-dead']);
  });
});
