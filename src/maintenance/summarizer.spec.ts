import { dueReason, RETRY_AFTER_FAILURE_MS } from './summarizer';
import type { CachedSummary } from '../history/summary-cache';

const NOW = 1_800_000_000_000;
const row = (over: Partial<CachedSummary>): CachedSummary => ({
  fingerprint: '0123456789abcdef', text: null, nextStep: null, model: null, generatedAt: null, summarizedCount: null, requestedAt: null, failedAt: null, ...over,
});
const made = { text: 't', model: 'm', generatedAt: NOW - 60_000, summarizedCount: 10 };

describe('when a group gets a model call', () => {
  it('a new group once; a summarized one again only once it has doubled', () => {
    expect(dueReason(undefined, 3, NOW)).toBe('new');
    expect(dueReason(row(made), 19, NOW)).toBeNull();
    expect(dueReason(row(made), 20, NOW)).toBe('doubled');
  });
  it('a request answers first, once', () => {
    expect(dueReason(row({ ...made, requestedAt: NOW - 1000 }), 10, NOW)).toBe('requested');
    expect(dueReason(row({ ...made, requestedAt: NOW - 120_000 }), 10, NOW)).toBeNull();
    expect(dueReason(row({ ...made, requestedAt: NOW - 2000, failedAt: NOW - 1000 }), 10, NOW)).toBeNull();
  });
  it('a failed call waits before the next try (a request does not)', () => {
    expect(dueReason(row({ failedAt: NOW - 1000 }), 3, NOW)).toBeNull();
    expect(dueReason(row({ failedAt: NOW - RETRY_AFTER_FAILURE_MS - 1 }), 3, NOW)).toBe('new');
    expect(dueReason(row({ ...made, failedAt: NOW - 1000 }), 40, NOW)).toBeNull();
    expect(dueReason(row({ failedAt: NOW - 2000, requestedAt: NOW - 1000 }), 3, NOW)).toBe('requested');
  });
});
