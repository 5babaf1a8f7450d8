import { Counter, Gauge, type Registry } from 'prom-client';
import type { BodyBudget } from './body-budget';

/**
 * The request-body series of a process (docs/operations.md "Metrics"):
 * - `sluice_http_body_bytes_in_flight` gauge: bytes of bodies being read and
 *   parsed now (MAX_INFLIGHT_BODY_BYTES bounds it; back to 0 when idle);
 * - `sluice_http_bodies_refused_total{reason}` counter: `busy` (503, over the
 *   in-flight bound), `too_large` (413, over the route's limit).
 */
export function registerBodyMetrics(registry: Registry, budget: BodyBudget): void {
  new Gauge({
    name: 'sluice_http_body_bytes_in_flight',
    help: 'Bytes of request bodies being read and parsed now (bounded by MAX_INFLIGHT_BODY_BYTES)',
    registers: [registry],
    collect() {
      this.set(budget.inFlight);
    },
  });
  new Counter({
    name: 'sluice_http_bodies_refused_total',
    help: 'Request bodies refused unread: busy = over MAX_INFLIGHT_BODY_BYTES (503), too_large = over the route limit (413)',
    labelNames: ['reason'],
    registers: [registry],
    collect() {
      const r = budget.refused;
      this.reset();
      this.inc({ reason: 'busy' }, r.busy);
      this.inc({ reason: 'too_large' }, r.tooLarge);
    },
  });
}
