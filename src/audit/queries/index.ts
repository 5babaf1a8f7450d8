import type { DataSource } from 'typeorm';
import type { Job } from '../../core/job';
import type { RedisJobStore } from '../../redis/redis-job-store';
import { backfillFingerprints } from '../fingerprint-backfill';
import { auditLag } from './audit-lag';
import { dlqGroups, DlqGroup } from './dlq-groups';
import { waitForMirror } from './mirror-barrier';
import { getJob } from './get-job';
import { jobEvents, JobEvent } from './job-events';
import { jobExecutions, JobExecution } from './job-executions';
import { jobLogs, JobLogLine } from './job-logs';
import { listDlq, ListDlqFilter } from './list-dlq';
import { listJobs, ListJobsFilter, Page } from './list-jobs';
import { queueCounts, QueueCounts, sumCounts } from './queue-counts';
import { throughput, Throughput } from './throughput';

export type { DlqGroup, JobEvent, JobExecution, JobLogLine, ListDlqFilter, ListJobsFilter, Page, QueueCounts, Throughput };
export { auditLag, dlqGroups, getJob, jobEvents, jobExecutions, jobLogs, listDlq, listJobs, queueCounts, sumCounts, throughput };

/**
 * The history services the HTTP API calls, bound to one Postgres data
 * source and one Redis store. Framework-free: a Nest provider can wrap it.
 * Each method is documented on the function it delegates to (one file per
 * operation in this folder). Times are epoch ms; bad input throws the core's
 * ValidationError (HTTP 400); an unreachable Redis/Postgres throws its
 * client's error (HTTP 503).
 */
export class HistoryQueries {
  constructor(
    readonly db: DataSource,
    readonly store: RedisJobStore,
  ) {}

  /**
   * Waits (≤ 2 s) until the events already in these queues' streams — all
   * queues when omitted — are mirrored, so reads that follow see them
   * (see mirror-barrier.ts). Called before every PostgreSQL read that a
   * client may make right after watching a job change state.
   */
  async settle(queues?: string[]): Promise<void> {
    await waitForMirror(this.store, queues ?? (await this.store.listQueues()));
  }

  /** Redis while live, else Postgres; null when unknown. */
  getJob(id: string): Promise<Job | null> {
    return getJob(this.db, this.store, id);
  }

  /** Newest first, keyset on id; limit 1..500 (default 50). */
  async listJobs(filter: ListJobsFilter = {}): Promise<Page<Job>> {
    await this.settle(filter.queue ? [filter.queue] : undefined);
    return listJobs(this.db, filter);
  }

  /** Audit trail, oldest first. */
  jobEvents(id: string): Promise<{ items: JobEvent[] }> {
    return jobEvents(this.db, id);
  }

  /** One row per execution started. */
  jobExecutions(id: string): Promise<{ items: JobExecution[] }> {
    return jobExecutions(this.db, id);
  }

  /** Handler log lines, oldest first. */
  jobLogs(id: string): Promise<{ items: JobLogLine[] }> {
    return jobLogs(this.db, id);
  }

  /** Dead-letter queue, newest failure first, keyset on (failed_at, job_id). */
  async listDlq(filter: ListDlqFilter = {}): Promise<Page<Job>> {
    await this.settle(filter.queue ? [filter.queue] : undefined);
    return listDlq(this.db, filter);
  }

  /**
   * Dead-letter groups, largest first (see dlq-groups.ts). Rows an audit
   * writer of an older version left without a fingerprint get theirs first
   * (a probe of the fingerprint index when there are none).
   */
  async dlqGroups(project: string, filter: { queue?: string; limit?: number } = {}): Promise<DlqGroup[]> {
    await this.settle(filter.queue ? [filter.queue] : undefined);
    for (let i = 0; i < 10 && (await backfillFingerprints(this.db)) > 0; i++);
    return dlqGroups(this.db, project, filter);
  }

  /** Exact counts per queue (live from Redis, terminal from Postgres). */
  async queueCounts(queues?: string[]): Promise<Record<string, QueueCounts>> {
    await this.settle(queues);
    return queueCounts(this.db, this.store, queues);
  }

  /** Completed / failed in the last minute. */
  throughput(): Promise<Throughput> {
    return throughput(this.db, this.store);
  }

  /** Age of the oldest unmirrored audit event, ms, and the backlog size. */
  auditLag(): Promise<{ lagMs: number; pending: number }> {
    return auditLag(this.store);
  }
}
