import type { Job } from '../core/job';
import { createdJob } from '../jobs/jobs.service';
import { iso, renderBySpread, toApiJob } from './api-job';

const created = createdJob(
  '0193a6f4-1c2b-7d3e-8f40-5a6b7c8d9e0f',
  'waiting',
  { queue: 'acme/q', type: 't', payloadJson: '{"a":1}', priority: 5 } as never,
  { a: 1 },
  { createdAt: 1_700_000_000_000, runAt: 1_700_000_005_000, maxAttempts: 3, timeoutMs: 600_000, backoff: 'exponential|2000|3600000|equal' },
);

describe('toApiJob', () => {
  const cases: [string, Job][] = [
    ['a just-created job', created],
    ['a failed job (fingerprint from lastError)', { ...created, status: 'failed', lastError: 'Error: boom at x.js:1', attempts: 3, startedAt: 1_700_000_006_000, finishedAt: 1_700_000_007_000 }],
    ['a DLQ copy with its stored fingerprint (one more key)', { ...created, status: 'failed', lastError: 'e', fingerprint: 'abc' }],
    ['more keys (a claimed job)', { ...created, lockToken: 'tok', leaseExpiresAt: 5 } as Job],
    ['the keys in another order', (({ id, ...rest }) => ({ ...rest, id }))(created) as Job],
    ['times out of range and NaN', { ...created, createdAt: 9e15, runAt: -9e15, updatedAt: Number.NaN }],
  ];
  it.each(cases)('%s: the same object and JSON, key order included, as the spread', (_name, j) => {
    const out = toApiJob(j);
    expect(out).toStrictEqual(renderBySpread(j));
    expect(JSON.stringify(out)).toBe(JSON.stringify(renderBySpread(j)));
  });

  it('iso renders each time right when runs of equal times alternate', () => {
    const times = [0, 0, 1, 1, 0, -1, Number.NaN, 1_700_000_000_000, 1_700_000_000_000, 0];
    expect(times.map(iso)).toEqual(times.map((t) => (Number.isNaN(t) ? null : new Date(t).toISOString())));
  });
});
