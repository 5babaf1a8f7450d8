import { Registry } from 'prom-client';
import { MirrorMetrics, MirrorMetricsBuffer, isMirrorMetricsDelta } from './mirror-metrics';

const value = (text: string, name: string) => Number(new RegExp(`^${name} (\\S+)$`, 'm').exec(text)?.[1]);

describe('MirrorMetrics', () => {
  it('counts batches, entries, sizes, quarantined entries, isolations and failures, on the registry passed in and one more', async () => {
    const own = new Registry();
    const m = new MirrorMetrics(own);
    const proc = new Registry();
    m.registerOn(proc); // the integrator's one line: the process's /metrics registry
    m.batch(1000, 0, false);
    m.batch(10, 3, true);
    m.failure();
    for (const text of [await own.metrics(), await proc.metrics()]) {
      expect(value(text, 'sluice_audit_batches_total')).toBe(2);
      expect(value(text, 'sluice_audit_entries_total')).toBe(1010);
      expect(value(text, 'sluice_audit_quarantined_entries_total')).toBe(3);
      expect(value(text, 'sluice_audit_isolated_batches_total')).toBe(1);
      expect(value(text, 'sluice_audit_batch_failures_total')).toBe(1);
      expect(value(text, 'sluice_audit_batch_entries_count')).toBe(2);
      expect(value(text, 'sluice_audit_batch_entries_sum')).toBe(1010);
      expect(text).toMatch(/^sluice_audit_batch_entries_bucket\{le="10"\} 1$/m);
    }
  });

  it("a thread's buffer adds up its writer's reports into one delta, which the parent applies", async () => {
    const buffer = new MirrorMetricsBuffer();
    expect(buffer.take()).toBeNull();
    buffer.batch(5, 0, false);
    buffer.batch(7, 2, true);
    buffer.failure();
    const d = buffer.take();
    expect(d).toEqual({ kind: 'sluice-audit-metrics', sizes: [5, 7], quarantined: 2, isolated: 1, failures: 1 });
    expect(buffer.take()).toBeNull();
    // Through a structured clone, as postMessage sends it.
    const sent = structuredClone(d);
    expect(isMirrorMetricsDelta(sent)).toBe(true);
    expect(isMirrorMetricsDelta('started')).toBe(false);
    const m = new MirrorMetrics();
    m.apply(sent!);
    const text = await m.registry.metrics();
    expect(value(text, 'sluice_audit_batches_total')).toBe(2);
    expect(value(text, 'sluice_audit_entries_total')).toBe(12);
    expect(value(text, 'sluice_audit_quarantined_entries_total')).toBe(2);
  });

  it('a buffer full of batch sizes asks to be reported', () => {
    let full = 0;
    const buffer = new MirrorMetricsBuffer(() => full++);
    for (let i = 0; i < 10_000; i++) buffer.batch(1, 0, false);
    expect(full).toBe(1);
  });
});
