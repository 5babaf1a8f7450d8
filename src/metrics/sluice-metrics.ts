import { collectDefaultMetrics, Counter, Histogram, Registry } from 'prom-client';

const HTTP_BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5];

/**
 * The Prometheus registry of one Sluice process (app instance), exposed by
 * `GET /metrics` in every role. A registry of its own, not prom-client's
 * global one: several apps in one process, as in the tests, must not collide.
 *
 * Every process: prom-client's default process metrics (`process_*`,
 * `nodejs_*`) and the HTTP series
 * - `sluice_http_requests_total{method,route,status}` counter,
 * - `sluice_http_request_duration_seconds{method,route}` histogram
 *   (route = the route pattern, e.g. `/jobs/:id`; `unmatched` for unknown paths).
 * Each role adds its own series on {@link registry} (src/metrics/metrics.module.ts):
 * worker: job-metrics.ts; api and worker: queue-metrics.ts; api and audit:
 * backlog-metrics.ts; scheduler: scheduler-metrics.ts. All times in seconds.
 */
export class SluiceMetrics {
  readonly registry = new Registry();
  private readonly httpCount: Counter<'method' | 'route' | 'status'>;
  private readonly httpTime: Histogram<'method' | 'route'>;

  constructor() {
    const registers = [this.registry];
    collectDefaultMetrics({ register: this.registry });
    this.httpCount = new Counter({ name: 'sluice_http_requests_total', help: 'HTTP requests answered', labelNames: ['method', 'route', 'status'], registers });
    this.httpTime = new Histogram({
      name: 'sluice_http_request_duration_seconds',
      help: 'HTTP request latency',
      labelNames: ['method', 'route'],
      buckets: HTTP_BUCKETS,
      registers,
    });
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

/** Rejects with "timeout" when `p` takes longer than `ms`. */
export function withTimeout<T>(p: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  return Promise.race([p, new Promise<never>((_, rej) => (timer = setTimeout(() => rej(new Error('timeout')), ms)))]).finally(() => clearTimeout(timer));
}
