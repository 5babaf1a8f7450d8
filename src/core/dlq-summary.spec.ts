import { GroupFacts, hourBucket, rulesSummary, SampleJob, shortTime } from './dlq-summary';

const NOW = Date.parse('2026-12-05T12:00:00.000Z');
const job = (i: number, over: Partial<SampleJob> = {}): SampleJob => ({
  id: `id-${i}`, queue: 'q', type: 't', attempts: 3, workerId: 'w-1', payloadKeys: ['a', 'b'], failedAt: NOW - i * 60_000, ...over,
});
const facts = (jobs: SampleJob[], over: Partial<GroupFacts> = {}): GroupFacts => ({
  fingerprint: '0123456789abcdef', sample: 'boom 1', count: jobs.length, types: ['t'], queues: ['q'],
  firstAt: NOW - 3_600_000, lastAt: NOW, hourly: new Array(24).fill(0), jobs, earlierKeys: null, ...over,
});

describe('rules summary', () => {
  it('hour buckets: the last is the hour ending now, older than 24 h is none', () => {
    expect(hourBucket(NOW, NOW)).toBe(23);
    expect(hourBucket(NOW - 3_599_999, NOW)).toBe(23);
    expect(hourBucket(NOW - 3_600_000, NOW)).toBe(22);
    expect(hourBucket(NOW - 24 * 3_600_000 + 1, NOW)).toBe(0);
    expect(hourBucket(NOW - 24 * 3_600_000, NOW)).toBeNull();
    expect(hourBucket(NOW + 5000, NOW)).toBe(23);
  });

  it('times within the day are short, older ones carry the date', () => {
    expect(shortTime(Date.parse('2026-12-05T10:02:00Z'), NOW)).toBe('10:02 UTC');
    expect(shortTime(Date.parse('2026-12-03T10:02:00Z'), NOW)).toBe('2026-12-03 10:02 UTC');
  });

  it('names the one worker and the attempt every job failed after', () => {
    const s = rulesSummary(facts(Array.from({ length: 12 }, (_, i) => job(i, { workerId: 'w-3' }))), NOW);
    expect(s.text).toMatch(/All 12 failed on worker w-3 after their 3rd attempt/);
    expect(s).toMatchObject({ workers: ['w-3'], attempts: [3], payloadKeys: ['a', 'b'], sampleSize: 12 });
    expect(s.exampleJobIds).toEqual(['id-0', 'id-1', 'id-2', 'id-3', 'id-4']);
  });

  it('a sample of a larger group says so', () => {
    const s = rulesSummary(facts(Array.from({ length: 50 }, (_, i) => job(i, { workerId: 'w-3' })), { count: 1204 }), NOW);
    expect(s.text).toMatch(/^1,204 jobs/);
    expect(s.text).toMatch(/The newest 50 of 1,204 failed on worker w-3/);
  });

  it('a mostly-one worker is named with its share; many workers say it is not one worker', () => {
    const most = rulesSummary(facts(Array.from({ length: 10 }, (_, i) => job(i, { workerId: i < 9 ? 'w-7' : 'w-1', attempts: 1 + (i % 2) }))), NOW);
    expect(most.text).toMatch(/9 of 10 failed on worker w-7/);
    expect(most.attempts).toEqual([1, 2]);
    const spread = rulesSummary(facts(Array.from({ length: 6 }, (_, i) => job(i, { workerId: `w-${i % 3}` }))), NOW);
    expect(spread.text).toMatch(/on 3 different workers/);
  });

  it('a key every failure has and no earlier completed job had is new', () => {
    const jobs = Array.from({ length: 4 }, (_, i) => job(i, { payloadKeys: ['amount', 'currency'], workerId: `w-${i}` }));
    const s = rulesSummary(facts(jobs, { earlierKeys: [['amount'], ['amount']] }), NOW);
    expect(s.newPayloadKeys).toEqual(['currency']);
    expect(s.text).toMatch(/new payload key `currency`/);
    // No earlier job known: nothing is called new.
    expect(rulesSummary(facts(jobs), NOW).newPayloadKeys).toEqual([]);
    // A job whose payload was not read does not empty the shared keys.
    expect(rulesSummary(facts([...jobs, job(9, { payloadKeys: null })]), NOW).payloadKeys).toEqual(['amount', 'currency']);
  });

  it('several types point to a shared dependency; a lone job reads in the singular', () => {
    const s = rulesSummary(facts([job(0, { type: 'a' }), job(1, { type: 'b' })], { types: ['a', 'b'], queues: ['q', 'r'] }), NOW);
    expect(s.text).toMatch(/^2 jobs of 2 types \(a, b\) in 2 queues \(q, r\)/);
    expect(s.text).toMatch(/shared dependency/);
    const one = rulesSummary(facts([job(0, { attempts: 1 })]), NOW);
    expect(one.text).toMatch(/^1 job of type t in queue q failed with "boom 1" at \d\d:\d\d UTC/);
    expect(one.text).toMatch(/It failed on its first attempt/);
  });
});
