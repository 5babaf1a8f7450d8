import { Injectable } from '@nestjs/common';
import { HistoryQueries, QueueCounts, sumCounts } from '../history';
import { defaultStepMs, finishSeries, FinishPoint } from '../history/finish-series';
import { parseTimeRange } from '../core/time-range';
import type { Job } from '../core/job';
import { QueueStore } from '../core/ports';
import { WorkersApiService } from '../workers/registry/workers.service';
import { recentJobs } from './recent-jobs';
import { bareQueue, inProject, qualify } from '../core/project-queue';

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
    private readonly store: QueueStore,
    private readonly history: HistoryQueries,
    private readonly workers: WorkersApiService,
  ) {}

  /**
   * The stats of `project`: its queues (by bare name), their totals and
   * throughput, the workers that serve it; the audit lag is the
   * installation's (one mirror for every project).
   * @throws when Redis or Postgres is unreachable (HTTP 503).
   */
  async stats(project: string): Promise<DashboardStats> {
    const { queues: names, sole } = await this.history.projectQueues(project);
    // queueCounts first waits for the mirror, so the throughput read after it includes what just happened too.
    const counts = await this.history.queueCounts(names);
    const [settings, workers, throughput, lag] = await Promise.all([
      Promise.all(names.map((n) => this.store.settings(n))),
      this.workers.list(project),
      this.history.throughput(sole ? null : project),
      this.history.mirrorLag(),
    ]);
    const queues: DashboardStats['queues'] = {};
    names.forEach((n, i) => {
      queues[bareQueue(n)] = { ...counts[n], paused: settings[i]?.paused ?? false, external: settings[i]?.external ?? false };
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
   * finish counters (src/history/finish-series.ts), zero-filled, of
   * `project`'s queues only (`q.queue` is the bare name of one of them).
   * `to` defaults to now, `from` to `to` − 1 h; the range is at most 31 days.
   * @param project the caller's project.
   * @returns the step used (the default one when none was given) and the points (epoch ms).
   * @throws ValidationError (400) naming from, to or stepMs.
   */
  async metrics(project: string, q: { queue?: string; from?: string; to?: string; stepMs?: number }): Promise<{ stepMs: number; series: FinishPoint[] }> {
    const range = parseTimeRange(q, Date.now(), { defaultSpanMs: 3_600_000 });
    const stepMs = q.stepMs ?? defaultStepMs(range);
    if (q.queue !== undefined) return { stepMs, series: await finishSeries(this.history.db, null, range, stepMs, qualify(project, q.queue)) };
    // Without the project condition when the project holds every queue (one-project installations keep their plan).
    const { sole } = await this.history.projectQueues(project);
    return { stepMs, series: await finishSeries(this.history.db, sole ? null : project, range, stepMs) };
  }

  /** The last 20 jobs of `project` by updatedAt, newest first (Postgres). */
  async recent(project: string): Promise<Job[]> {
    const { queues, sole } = await this.history.projectQueues(project);
    await this.history.settle(queues);
    // Without the project condition (one project only), a row of a queue created meanwhile elsewhere is dropped here.
    return (await recentJobs(this.history.db, sole ? null : project)).filter((j) => inProject(j.queue, project));
  }
}
