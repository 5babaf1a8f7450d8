import { Counter, Histogram, Registry } from 'prom-client';

/**
 * What the mirror writer reports, once per batch (never per entry): the
 * sink it is given in MirrorWriterOptions.metrics.
 */
export interface MirrorWriterMetrics {
  /**
   * A batch done: `entries` acknowledged, of which `quarantined` were
   * quarantined (src/mirror/quarantine.ts); `isolated`: PostgreSQL refused the
   * batch and it was bisected (src/mirror/isolate.ts).
   */
  batch(entries: number, quarantined: number, isolated: boolean): void;
  /** An attempt at a batch failed (PostgreSQL or Redis unavailable): it waits in Redis for a retry. */
  failure(): void;
}

/** The writer's counts since the last report, as a worker thread sends them to its parent (src/mirror/writer-thread.ts). */
export interface MirrorMetricsDelta {
  kind: 'sluice-audit-metrics';
  /** Entries of each batch, in order (one number per batch). */
  sizes: number[];
  quarantined: number;
  isolated: number;
  failures: number;
}

/** Batch sizes, entries: the writer takes up to 1,000 per batch. */
const BATCH_BUCKETS = [1, 5, 10, 25, 50, 100, 250, 500, 750, 1000];

/**
 * The mirror writer's Prometheus metrics, registered on the registry passed
 * in (and on more with {@link registerOn}):
 * - `sluice_audit_batches_total` counter: batches mirrored (written and acknowledged);
 * - `sluice_audit_entries_total` counter: stream entries mirrored (quarantined ones included);
 * - `sluice_audit_batch_entries` histogram: entries per batch;
 * - `sluice_audit_quarantined_entries_total` counter: entries quarantined in
 *   `audit_quarantine` (PostgreSQL refused them, or the projection could not read them);
 * - `sluice_audit_isolated_batches_total` counter: batches PostgreSQL refused, bisected to find the entries it refuses;
 * - `sluice_audit_batch_failures_total` counter: attempts that failed with
 *   PostgreSQL or Redis unavailable (the batch waits in Redis and is retried).
 * Fed by the writer on the main thread, or by the deltas its worker thread sends ({@link apply}).
 */
export class MirrorMetrics implements MirrorWriterMetrics {
  readonly registry: Registry;
  private readonly batches = new Counter({ name: 'sluice_audit_batches_total', help: 'Audit batches mirrored to PostgreSQL', registers: [] });
  private readonly entries = new Counter({ name: 'sluice_audit_entries_total', help: 'Events-stream entries mirrored (written or quarantined)', registers: [] });
  private readonly sizes = new Histogram({ name: 'sluice_audit_batch_entries', help: 'Entries per audit batch', buckets: BATCH_BUCKETS, registers: [] });
  private readonly quarantined = new Counter({
    name: 'sluice_audit_quarantined_entries_total',
    help: 'Events-stream entries the audit writer could not mirror, kept in audit_quarantine',
    registers: [],
  });
  private readonly isolated = new Counter({ name: 'sluice_audit_isolated_batches_total', help: 'Audit batches refused by PostgreSQL and bisected', registers: [] });
  private readonly failures = new Counter({
    name: 'sluice_audit_batch_failures_total',
    help: 'Audit batch attempts that failed with PostgreSQL or Redis unavailable (retried)',
    registers: [],
  });

  /** @param registry where to register (a registry of its own when omitted). */
  constructor(registry: Registry = new Registry()) {
    this.registry = registry;
    this.registerOn(registry);
  }

  /** Registers the metrics on one more registry (e.g. the process's `/metrics` one). @throws when one of the names is already there. */
  registerOn(registry: Registry): void {
    for (const m of [this.batches, this.entries, this.sizes, this.quarantined, this.isolated, this.failures]) registry.registerMetric(m);
  }

  batch(entries: number, quarantined: number, isolated: boolean): void {
    this.batches.inc();
    this.entries.inc(entries);
    this.sizes.observe(entries);
    if (quarantined) this.quarantined.inc(quarantined);
    if (isolated) this.isolated.inc();
  }

  failure(): void {
    this.failures.inc();
  }

  /** Adds the counts a writer thread reported. */
  apply(d: MirrorMetricsDelta): void {
    if (d.sizes.length) {
      this.batches.inc(d.sizes.length);
      let n = 0;
      for (const s of d.sizes) {
        n += s;
        this.sizes.observe(s);
      }
      this.entries.inc(n);
    }
    if (d.quarantined) this.quarantined.inc(d.quarantined);
    if (d.isolated) this.isolated.inc(d.isolated);
    if (d.failures) this.failures.inc(d.failures);
  }
}

/** Most batch sizes a delta carries; past it a thread reports early. */
const MAX_SIZES = 10_000;

/**
 * The writer thread's side: adds up what the writer reports and hands it
 * over as one {@link MirrorMetricsDelta} per {@link take} (the thread posts
 * one a second), so the parent's registry gets one message per interval,
 * not one per batch.
 */
export class MirrorMetricsBuffer implements MirrorWriterMetrics {
  private d: MirrorMetricsDelta = MirrorMetricsBuffer.empty();

  /** @param onFull called when the buffer holds MAX_SIZES batches (report now). */
  constructor(private readonly onFull?: () => void) {}

  private static empty(): MirrorMetricsDelta {
    return { kind: 'sluice-audit-metrics', sizes: [], quarantined: 0, isolated: 0, failures: 0 };
  }

  batch(entries: number, quarantined: number, isolated: boolean): void {
    this.d.sizes.push(entries);
    this.d.quarantined += quarantined;
    if (isolated) this.d.isolated++;
    if (this.d.sizes.length >= MAX_SIZES) this.onFull?.();
  }

  failure(): void {
    this.d.failures++;
  }

  /** The counts since the last call, or null when there is nothing to report. */
  take(): MirrorMetricsDelta | null {
    const d = this.d;
    if (!d.sizes.length && !d.failures) return null;
    this.d = MirrorMetricsBuffer.empty();
    return d;
  }
}

/** Whether a message from the writer thread is a metrics delta. */
export function isMirrorMetricsDelta(m: unknown): m is MirrorMetricsDelta {
  return typeof m === 'object' && m !== null && (m as MirrorMetricsDelta).kind === 'sluice-audit-metrics';
}
