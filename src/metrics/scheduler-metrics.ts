import { Counter, Registry } from 'prom-client';
import { splitQualified } from '../core/project-queue';

/**
 * The scheduler role's series, on the process registry, each with `project`
 * and `queue` (the bare name) of the qualified queue (src/core/project-queue.ts):
 * - `sluice_cron_slots_fired_total{queue}` counter: schedule slots this
 *   process turned into a job (enqueued and confirmed; src/schedules/schedule-materializer.ts);
 * - `sluice_leases_reaped_total{queue}` counter: jobs this process's reaper
 *   took back after their lease expired (to waiting, the DLQ, or cancelled;
 *   src/maintenance/maintenance.service.ts).
 */
export class SchedulerMetrics {
  private readonly fired: Counter<'project' | 'queue'>;
  private readonly reaped: Counter<'project' | 'queue'>;

  constructor(registry: Registry) {
    const registers = [registry];
    this.fired = new Counter({ name: 'sluice_cron_slots_fired_total', help: 'Schedule slots turned into a job by this process', labelNames: ['project', 'queue'], registers });
    this.reaped = new Counter({ name: 'sluice_leases_reaped_total', help: 'Jobs taken back after their lease expired, by this process', labelNames: ['project', 'queue'], registers });
  }

  /** One schedule slot fired (its job enqueued on `queue`). */
  slotFired(queue: string): void {
    this.fired.inc(splitQualified(queue));
  }

  /** `count` expired leases of `queue` reaped in one pass. */
  leasesReaped(queue: string, count: number): void {
    if (count > 0) this.reaped.inc(splitQualified(queue), count);
  }
}
