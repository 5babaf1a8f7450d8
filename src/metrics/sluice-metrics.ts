import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';
import type { BacklogMetrics } from '../audit/audit-backlog';
import type { AttemptOutcome } from '../workers/worker-runtime';

/** Where the scrape-time gauges read from (the process's store and backlog guard). */
export interface MetricsSources {
  /** Queue names, then per queue the live counts (src/redis/redis-job-store.ts). */
  listQueues(): Promise<string[]>;
  liveCounts(queue: string): Promise<{ waiting: number; delayed: number; active: number; failed: number }>;
  /** Audit backlog as of its last refresh (BacklogService.metrics); null when not available. */
  backlog(): BacklogMetrics | null;
}

/** Longest a scrape waits for the queue depths, ms; on timeout the depth series are left out. */
export const DEPTH_SCRAPE_TIMEOUT_MS = 1000;

const QUEUE_STATES = ['waiting', 'delayed', 'active', 'failed'] as const;
/** Job times span ms (no-op handlers) to hours (long jobs, delayed runs). */
const JOB_BUCKETS = [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 900, 3600];
const HTTP_BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5];

/**
 * The Prometheus metrics of one Sluice app instance, on a registry of its own
 * (not prom-client's global one: several apps in one process, as in the
 * tests, must not collide). Exposed by `GET /metrics`.
 *
 * Metric names (all times in seconds, per Prometheus convention):
 * - `sluice_queue_jobs{queue,state}` gauge: jobs per queue in state
 *   waiting | delayed | active | failed (Redis ZCARDs, read on scrape, ≤ 1 s;
 *   `sluice_queue_depth_scrape_success` is 0 when that read failed or timed out).
 * - `sluice_jobs_started_total{queue}` counter: attempts started by this process's worker.
 * - `sluice_jobs_completed_total{queue}` counter: attempts whose handler returned.
 * - `sluice_jobs_failed_total{queue,reason}` counter: attempts that failed,
 *   reason error | timeout (a retry may follow; the job's final state is in the queue gauges).
 * - `sluice_jobs_interrupted_total{queue,reason}` counter: attempts that ended
 *   without a result: cancelled | lease_lost | released (shutdown).
 * - `sluice_job_processing_seconds{queue,outcome}` histogram: handler run time
 *   of completed and failed attempts.
 * - `sluice_job_wait_seconds{queue}` histogram: job creation (its UUIDv7 id) →
 *   attempt start; for delayed or retried jobs this includes the planned delay.
 * - `sluice_audit_lag_seconds` gauge: age of the oldest audit event not yet
 *   mirrored to PostgreSQL; `sluice_audit_backlog_events` gauge: events waiting;
 *   `sluice_audit_backlog_max` gauge: AUDIT_MAX_BACKLOG; `sluice_audit_backlog_over_limit`
 *   gauge: 1 while enqueue is refused; `sluice_enqueue_refused_total` counter:
 *   enqueues refused by load shedding since start.
 * - `sluice_http_requests_total{method,route,status}` counter and
 *   `sluice_http_request_duration_seconds{method,route}` histogram (route =
 *   the route pattern, e.g. `/jobs/:id`; `unmatched` for 404s of unknown paths).
 * - prom-client's default process metrics (`process_*`, `nodejs_*`).
 */
export class SluiceMetrics {
  readonly registry = new Registry();
  private readonly started: Counter<'queue'>;
  private readonly completed: Counter<'queue'>;
  private readonly failed: Counter<'queue' | 'reason'>;
  private readonly interrupted: Counter<'queue' | 'reason'>;
  private readonly processing: Histogram<'queue' | 'outcome'>;
  private readonly wait: Histogram<'queue'>;
  private readonly httpCount: Counter<'method' | 'route' | 'status'>;
  private readonly httpTime: Histogram<'method' | 'route'>;

  constructor(private readonly sources: MetricsSources) {
    const registers = [this.registry];
    collectDefaultMetrics({ register: this.registry });
    this.started = new Counter({ name: 'sluice_jobs_started_total', help: 'Attempts started by this process', labelNames: ['queue'], registers });
    this.completed = new Counter({ name: 'sluice_jobs_completed_total', help: 'Attempts completed (handler returned)', labelNames: ['queue'], registers });
    this.failed = new Counter({ name: 'sluice_jobs_failed_total', help: 'Attempts failed (handler error or timeout)', labelNames: ['queue', 'reason'], registers });
    this.interrupted = new Counter({
      name: 'sluice_jobs_interrupted_total',
      help: 'Attempts ended without a result (cancelled, lease lost, released at shutdown)',
      labelNames: ['queue', 'reason'],
      registers,
    });
    this.processing = new Histogram({
      name: 'sluice_job_processing_seconds',
      help: 'Handler run time of completed and failed attempts',
      labelNames: ['queue', 'outcome'],
      buckets: JOB_BUCKETS,
      registers,
    });
    this.wait = new Histogram({ name: 'sluice_job_wait_seconds', help: 'Job creation to attempt start', labelNames: ['queue'], buckets: JOB_BUCKETS, registers });
    this.httpCount = new Counter({ name: 'sluice_http_requests_total', help: 'HTTP requests answered', labelNames: ['method', 'route', 'status'], registers });
    this.httpTime = new Histogram({
      name: 'sluice_http_request_duration_seconds',
      help: 'HTTP request latency',
      labelNames: ['method', 'route'],
      buckets: HTTP_BUCKETS,
      registers,
    });
    this.scrapeGauges(registers);
  }

  /** Gauges computed when scraped (queue depths from Redis, the audit backlog from memory). */
  private scrapeGauges(registers: Registry[]): void {
    const sources = this.sources;
    const success = new Gauge({ name: 'sluice_queue_depth_scrape_success', help: '1 when the queue depths were read on this scrape', registers });
    new Gauge({
      name: 'sluice_queue_jobs',
      help: 'Jobs per queue and state',
      labelNames: ['queue', 'state'],
      registers,
      async collect() {
        this.reset();
        try {
          const rows = await withTimeout(
            sources.listQueues().then((qs) => Promise.all(qs.map(async (q) => [q, await sources.liveCounts(q)] as const))),
            DEPTH_SCRAPE_TIMEOUT_MS,
          );
          for (const [queue, counts] of rows) for (const state of QUEUE_STATES) this.set({ queue, state }, counts[state]);
          success.set(1);
        } catch {
          success.set(0);
        }
      },
    });
    const backlogGauge = (name: string, help: string, read: (b: BacklogMetrics) => number) =>
      new Gauge({
        name,
        help,
        registers,
        collect() {
          const b = sources.backlog();
          if (b) this.set(read(b));
        },
      });
    backlogGauge('sluice_audit_lag_seconds', 'Age of the oldest audit event not yet mirrored to PostgreSQL', (b) => b.lagMs / 1000);
    backlogGauge('sluice_audit_backlog_events', 'Audit events waiting in Redis', (b) => b.pending);
    backlogGauge('sluice_audit_backlog_max', 'AUDIT_MAX_BACKLOG', (b) => b.max);
    backlogGauge('sluice_audit_backlog_over_limit', '1 while enqueue is refused for the audit backlog', (b) => (b.overLimit ? 1 : 0));
    new Counter({
      name: 'sluice_enqueue_refused_total',
      help: 'Enqueues refused by audit-backlog load shedding',
      registers,
      collect() {
        const b = sources.backlog();
        if (!b) return;
        // The guard keeps the running total: mirror it into the counter.
        this.reset();
        this.inc(b.refusedEnqueues);
      },
    });
  }

  /** An attempt started; `waitMs` since the job was created. */
  jobStarted(queue: string, waitMs: number): void {
    this.started.inc({ queue });
    this.wait.observe({ queue }, Math.max(0, waitMs) / 1000);
  }

  /** An attempt ended; `durationMs` from its start. */
  jobFinished(queue: string, outcome: AttemptOutcome, durationMs: number): void {
    if (outcome === 'completed') this.completed.inc({ queue });
    else if (outcome === 'failed' || outcome === 'timeout') this.failed.inc({ queue, reason: outcome === 'failed' ? 'error' : 'timeout' });
    else {
      this.interrupted.inc({ queue, reason: outcome });
      return;
    }
    this.processing.observe({ queue, outcome: outcome === 'completed' ? 'completed' : 'failed' }, Math.max(0, durationMs) / 1000);
  }

  /** One HTTP request answered. */
  httpRequest(method: string, route: string, status: number, durationMs: number): void {
    this.httpCount.inc({ method, route, status: String(status) });
    this.httpTime.observe({ method, route }, durationMs / 1000);
  }

  /** The exposition text and its content type. */
  async render(): Promise<{ contentType: string; body: string }> {
    return { contentType: this.registry.contentType, body: await this.registry.metrics() };
  }
}

function withTimeout<T>(p: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  return Promise.race([p, new Promise<never>((_, rej) => (timer = setTimeout(() => rej(new Error('timeout')), ms)))]).finally(() => clearTimeout(timer));
}
