import { Counter, type Registry } from 'prom-client';
import type { RebuildReport } from './loss-watch';

/**
 * The restore watch's series (src/restore/loss-watch.ts), on the process's
 * `/metrics` registry:
 * - `sluice_redis_restores_total` counter: rebuilds of Redis from PostgreSQL
 *   while running (Redis came back empty or rewound), by this process;
 * - `sluice_redis_restored_jobs_total` counter: jobs those rebuilds brought back.
 */
export class RestoreMetrics {
  private readonly restores: Counter;
  private readonly jobs: Counter;

  constructor(registry: Registry) {
    const registers = [registry];
    this.restores = new Counter({ name: 'sluice_redis_restores_total', help: 'Rebuilds of Redis from PostgreSQL while running (Redis came back empty or rewound), by this process', registers });
    this.jobs = new Counter({ name: 'sluice_redis_restored_jobs_total', help: 'Jobs the rebuilds of Redis from PostgreSQL brought back, by this process', registers });
  }

  rebuilt(r: RebuildReport): void {
    this.restores.inc();
    this.jobs.inc(r.jobs);
  }
}
