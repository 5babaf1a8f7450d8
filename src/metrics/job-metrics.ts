import { Counter, Histogram, Registry } from 'prom-client';
import type { AttemptOutcome } from '../core/handler';
import { splitQualified } from '../core/project-queue';

/** Job times span ms (no-op handlers) to hours (long jobs, delayed runs). */
const JOB_BUCKETS = [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 900, 3600];

/**
 * Label value of a job type this worker has no handler for (the attempt fails
 * with "no handler registered"). Not a valid type (types match
 * `^[A-Za-z0-9_.:-]{1,128}$`), so it cannot collide with one; it keeps the
 * `type` label bounded by the handlers registered in the process.
 */
export const UNREGISTERED_TYPE = '(unregistered)';

/**
 * The worker role's series, on the process registry (times in seconds); each
 * carries `project` and `queue` (the bare name) of the job's qualified queue
 * (src/core/project-queue.ts), shortened below to `{queue,…}`:
 * - `sluice_jobs_started_total{queue,type}` counter: attempts started by this process;
 * - `sluice_jobs_completed_total{queue,type}` counter: attempts whose handler returned;
 * - `sluice_jobs_failed_total{queue,type,reason}` counter: reason error | timeout
 *   (a retry may follow; the job's final state is in the queue gauges);
 * - `sluice_jobs_interrupted_total{queue,type,reason}` counter: ended without a
 *   result: cancelled | lease_lost | released (shutdown);
 * - `sluice_job_processing_seconds{queue,type,outcome}` histogram: handler run
 *   time of completed and failed attempts;
 * - `sluice_job_wait_seconds{queue,type}` histogram: job creation (its UUIDv7
 *   id) → attempt start; for delayed or retried jobs this includes the planned delay.
 */
export class JobMetrics {
  private readonly started: Counter<'project' | 'queue' | 'type'>;
  private readonly completed: Counter<'project' | 'queue' | 'type'>;
  private readonly failed: Counter<'project' | 'queue' | 'type' | 'reason'>;
  private readonly interrupted: Counter<'project' | 'queue' | 'type' | 'reason'>;
  private readonly processing: Histogram<'project' | 'queue' | 'type' | 'outcome'>;
  private readonly wait: Histogram<'project' | 'queue' | 'type'>;

  /** @param knownType true for the types this process has a handler for; others are labelled {@link UNREGISTERED_TYPE}. */
  constructor(
    registry: Registry,
    private readonly knownType: (type: string) => boolean,
  ) {
    const registers = [registry];
    // Both read the counts held since the last read first (see labelSets).
    const collect = () => this.flushCounts();
    this.started = new Counter({ name: 'sluice_jobs_started_total', help: 'Attempts started by this process', labelNames: ['project', 'queue', 'type'], registers, collect });
    this.completed = new Counter({ name: 'sluice_jobs_completed_total', help: 'Attempts completed (handler returned)', labelNames: ['project', 'queue', 'type'], registers, collect });
    this.failed = new Counter({ name: 'sluice_jobs_failed_total', help: 'Attempts failed (handler error or timeout)', labelNames: ['project', 'queue', 'type', 'reason'], registers });
    this.interrupted = new Counter({
      name: 'sluice_jobs_interrupted_total',
      help: 'Attempts ended without a result (cancelled, lease lost, released at shutdown)',
      labelNames: ['project', 'queue', 'type', 'reason'],
      registers,
    });
    this.processing = new Histogram({
      name: 'sluice_job_processing_seconds',
      help: 'Handler run time of completed and failed attempts',
      labelNames: ['project', 'queue', 'type', 'outcome'],
      buckets: JOB_BUCKETS,
      registers,
    });
    this.wait = new Histogram({ name: 'sluice_job_wait_seconds', help: 'Job creation to attempt start', labelNames: ['project', 'queue', 'type'], buckets: JOB_BUCKETS, registers });
  }

  private label(type: string): string {
    return this.knownType(type) ? type : UNREGISTERED_TYPE;
  }

  /**
   * The label sets of one queue and job type, built once: two calls per job
   * spread new label objects otherwise (with the garbage they leave, most of
   * the ~10 µs per job these hooks cost). Never mutated (prom-client keeps
   * references to them). At most {@link MAX_LABEL_SETS} entries; beyond that
   * they are built per call. A kept set also holds its started and completed
   * counts until the next read of either counter (`collect`): prom-client's
   * `inc` hashes the label object on every call, 4 % of the worker's main
   * thread at ~10,000 jobs/s (docs/benchmarks.md).
   */
  private labelSets(queue: string, type: string): LabelSets {
    const key = `${queue}\u0000${type}`;
    let l = this.sets.get(key);
    if (!l) {
      const q = splitQualified(queue);
      const t = this.label(type);
      l = {
        base: { ...q, type: t },
        completed: { ...q, type: t, outcome: 'completed' },
        failedRun: { ...q, type: t, outcome: 'failed' },
        error: { ...q, type: t, reason: 'error' },
        timeout: { ...q, type: t, reason: 'timeout' },
        kept: false,
        startedN: 0,
        completedN: 0,
      };
      // A type without a handler is not kept: one registered later gets its own label then.
      if (t !== UNREGISTERED_TYPE && this.sets.size < MAX_LABEL_SETS) {
        l.kept = true;
        this.sets.set(key, l);
      }
    }
    return l;
  }

  private readonly sets = new Map<string, LabelSets>();

  /** Adds the counts the kept label sets hold to the counters (prom-client calls it before every read). */
  private flushCounts(): void {
    for (const l of this.sets.values()) {
      if (l.startedN) this.started.inc(l.base, l.startedN);
      if (l.completedN) this.completed.inc(l.base, l.completedN);
      l.startedN = l.completedN = 0;
    }
  }

  /** An attempt started; `waitMs` since the job was created. */
  jobStarted(queue: string, type: string, waitMs: number): void {
    const l = this.labelSets(queue, type);
    if (l.kept) l.startedN++;
    else this.started.inc(l.base);
    this.wait.observe(l.base, Math.max(0, waitMs) / 1000);
  }

  /** An attempt ended; `durationMs` from its start. */
  jobFinished(queue: string, type: string, outcome: AttemptOutcome, durationMs: number): void {
    const l = this.labelSets(queue, type);
    if (outcome === 'completed') {
      if (l.kept) l.completedN++;
      else this.completed.inc(l.base);
    } else if (outcome === 'failed' || outcome === 'timeout') this.failed.inc(outcome === 'failed' ? l.error : l.timeout);
    else {
      this.interrupted.inc({ ...l.base, reason: outcome });
      return;
    }
    this.processing.observe(outcome === 'completed' ? l.completed : l.failedRun, Math.max(0, durationMs) / 1000);
  }
}

/** Bound of {@link JobMetrics}' cache of label sets (queues × job types seen). */
const MAX_LABEL_SETS = 10_000;

interface LabelSets {
  base: { project: string; queue: string; type: string };
  completed: { project: string; queue: string; type: string; outcome: string };
  failedRun: { project: string; queue: string; type: string; outcome: string };
  error: { project: string; queue: string; type: string; reason: string };
  timeout: { project: string; queue: string; type: string; reason: string };
  /** In the cache: its counts below wait for the next read. */
  kept: boolean;
  /** Attempts started / completed since the counters last read them. */
  startedN: number;
  completedN: number;
}
