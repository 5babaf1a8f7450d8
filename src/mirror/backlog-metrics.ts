import { Counter, Gauge, Registry } from 'prom-client';
import type { BacklogMetrics } from './backlog';

/**
 * The audit backlog series of the api and audit roles, read from the
 * process's BacklogService when scraped (it refreshes every second):
 * - `sluice_audit_lag_seconds` gauge: age of the oldest audit event not yet mirrored to PostgreSQL;
 * - `sluice_audit_backlog_events` gauge: events waiting in Redis;
 * - `sluice_audit_backlog_max` gauge: AUDIT_MAX_BACKLOG;
 * - `sluice_audit_backlog_over_limit` gauge: 1 while enqueue is refused;
 * - `sluice_enqueue_refused_total` counter: enqueues this process refused by load shedding.
 * @param backlog the current numbers; null when not available (series left out).
 */
export function registerBacklogMetrics(registry: Registry, backlog: () => BacklogMetrics | null): void {
  const registers = [registry];
  const gauge = (name: string, help: string, read: (b: BacklogMetrics) => number) =>
    new Gauge({
      name,
      help,
      registers,
      collect() {
        const b = backlog();
        if (b) this.set(read(b));
      },
    });
  gauge('sluice_audit_lag_seconds', 'Age of the oldest audit event not yet mirrored to PostgreSQL', (b) => b.lagMs / 1000);
  gauge('sluice_audit_backlog_events', 'Audit events waiting in Redis', (b) => b.pending);
  gauge('sluice_audit_backlog_max', 'AUDIT_MAX_BACKLOG', (b) => b.max);
  gauge('sluice_audit_backlog_over_limit', '1 while enqueue is refused for the audit backlog', (b) => (b.overLimit ? 1 : 0));
  new Counter({
    name: 'sluice_enqueue_refused_total',
    help: 'Enqueues refused by audit-backlog load shedding',
    registers,
    collect() {
      const b = backlog();
      if (!b) return;
      // The guard keeps the running total: mirror it into the counter.
      this.reset();
      this.inc(b.refusedEnqueues);
    },
  });
}
