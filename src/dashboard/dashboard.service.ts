import { Injectable } from '@nestjs/common';
import { HistoryQueries, QueueCounts, sumCounts } from '../audit/queries';
import { defaultStepMs, finishSeries, FinishPoint } from '../audit/queries/finish-series';
import { parseTimeRange } from '../core/time-range';
import type { Job } from '../core/job';
import { RedisJobStore } from '../redis/redis-job-store';
import { WorkersApiService } from '../workers-api/workers-api.service';
import { recentJobs } from './recent-jobs';

/** The API.md `GET /dashboard/stats` body (`external` per queue and `workers.total` are additions). */
export interface DashboardStats {
  queues: Record<string, QueueCounts & { paused: boolean; external: boolean }>;
  totals: QueueCounts;
  /** `active`: workers alive (running or draining); dead ones are not counted. */
  workers: { active: number; total: number };
  throughput: { completedPerMin: number; failedPerMin: number };
  /** Age of the oldest audit event not yet mirrored to Postgres, ms (0 = caught up). */
  auditLagMs: number;
}

/** Aggregates for the dashboard: one call each to the history queries, the store and the worker registry. */
@Injectable()
export class DashboardService {
  constructor(
    private readonly store: RedisJobStore,
    private readonly history: HistoryQueries,
    private readonly workers: WorkersApiService,
  ) {}

  /** @throws when Redis or Postgres is unreachable (HTTP 503). */
  async stats(): Promise<DashboardStats> {
    const names = await this.store.listQueues();
    // queueCounts first waits for the mirror, so the throughput read after it includes what just happened too.
    const counts = await this.history.queueCounts(names);
    const [settings, workers, throughput, lag] = await Promise.all([
      Promise.all(names.map((n) => this.store.queueSettings(n))),
      this.workers.list(),
      this.history.throughput(),
      this.history.auditLag(),
    ]);
    const queues: DashboardStats['queues'] = {};
    names.forEach((n, i) => {
      queues[n] = { ...counts[n], paused: settings[i]?.paused ?? false, external: settings[i]?.external ?? false };
    });
    return {
      queues,
      totals: sumCounts(counts),
      workers: { active: workers.filter((w) => w.status !== 'dead').length, total: workers.length },
      throughput,
      auditLagMs: lag.lagMs,
    };
  }

  /**
   * `GET /dashboard/metrics`: completed / failed per step from PostgreSQL's
   * finish counters (src/audit/queries/finish-series.ts), zero-filled.
   * `to` defaults to now, `from` to `to` − 1 h; the range is at most 31 days.
   * @param project the caller's project.
   * @returns the step used (the default one when none was given) and the points (epoch ms).
   * @throws ValidationError (400) naming from, to or stepMs.
   */
  async metrics(project: string, q: { queue?: string; from?: string; to?: string; stepMs?: number }): Promise<{ stepMs: number; series: FinishPoint[] }> {
    const range = parseTimeRange(q, Date.now(), { defaultSpanMs: 3_600_000 });
    const stepMs = q.stepMs ?? defaultStepMs(range);
    return { stepMs, series: await finishSeries(this.history.db, project, range, stepMs, q.queue) };
  }

  /** The last 20 jobs by updatedAt, newest first (Postgres). */
  async recent(): Promise<Job[]> {
    await this.history.settle();
    return recentJobs(this.history.db);
  }
}
