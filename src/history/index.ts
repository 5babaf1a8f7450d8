import type { DataSource } from 'typeorm';
import type { Job } from '../core/job';
import type { JobStore, MirrorStream, QueueStore, StoreConnection } from '../core/ports';
import { backfillFingerprints } from '../postgres/fingerprint-backfill';
import { inProject } from '../core/project-queue';
import { mirrorLag } from './mirror-lag';
import { dlqGroups, DlqGroup } from './dlq-groups';
import { groupFacts, GroupScope, SampleRow } from './dlq-summary';
import type { GroupFacts } from '../core/dlq-summary';
import { waitForMirror } from './mirror-barrier';
import { getJob } from './get-job';
import { dependenciesOf, flowJobs, FlowDependency, FlowJob, readFlowFields } from './flows';
import type { RestoreJobFlow } from '../core/ports/restore';
import type { HistoryJob } from './common';
import { jobEvents, JobEvent } from './job-events';
import { jobExecutions, JobExecution } from './job-executions';
import { jobLogs, JobLogLine } from './job-logs';
import { listDlq, ListDlqFilter } from './list-dlq';
import { listJobs, ListJobsFilter, Page } from './list-jobs';
import { queueCounts, QueueCounts, sumCounts } from './queue-counts';
import { throughput, Throughput } from './throughput';

export type { GroupScope, SampleRow };
export type { DlqGroup, FlowDependency, FlowJob, HistoryJob, JobEvent, JobExecution, JobLogLine, ListDlqFilter, ListJobsFilter, Page, QueueCounts, Throughput };
export { mirrorLag, dlqGroups, dependenciesOf, flowJobs, getJob, jobEvents, jobExecutions, jobLogs, listDlq, listJobs, queueCounts, sumCounts, throughput };

/** The live (hot-store) side the history reads beside PostgreSQL. */
export interface LiveStores {
  jobs: JobStore;
  queues: QueueStore;
  mirror: MirrorStream;
  connection: StoreConnection;
}

/**
 * The history services the HTTP API calls, bound to one Postgres data
 * source and the live stores. Framework-free: a Nest provider can wrap it.
 * Each method is documented on the function it delegates to (one file per
 * operation in this folder). Times are epoch ms; bad input throws the core's
 * ValidationError (HTTP 400); an unreachable Redis/Postgres throws its
 * client's error (HTTP 503).
 */
export class HistoryQueries {
  constructor(
    readonly db: DataSource,
    readonly live: LiveStores,
  ) {}

  /**
   * Waits (≤ 2 s) until the events already in these queues' streams — all
   * queues when omitted — are mirrored, so reads that follow see them
   * (see mirror-barrier.ts). Called before every PostgreSQL read that a
   * client may make right after watching a job change state.
   */
  async settle(queues?: string[]): Promise<void> {
    await waitForMirror(this.live.mirror, queues ?? (await this.live.queues.list()));
  }

  /** Redis while live, else Postgres; null when unknown. */
  getJob(id: string): Promise<Job | null> {
    return getJob(this.db, this.live, id);
  }

  /**
   * The qualified names of `project`'s queues (src/core/project-queue.ts),
   * and whether they are every known queue: then a listing of the project
   * needs no project condition in SQL (an installation with one project,
   * typically `default` alone, keeps the plans it had before projects).
   */
  async projectQueues(project: string): Promise<{ queues: string[]; sole: boolean }> {
    const all = await this.live.queues.list();
    const queues = all.filter((q) => inProject(q, project));
    return { queues, sole: queues.length === all.length };
  }

  /**
   * Newest first, keyset on id; limit 1..500 (default 50). With
   * `filter.project` (and no queue), only that project's jobs: a row of
   * another project never leaves here, even one that a racing new queue
   * slips into a query run without the project condition (then the page is
   * shorter; the cursor stays right).
   */
  async listJobs(filter: ListJobsFilter = {}): Promise<Page<HistoryJob>> {
    if (filter.queue !== undefined || filter.project == null) {
      await this.settle(filter.queue ? [filter.queue] : undefined);
      return listJobs(this.db, filter);
    }
    const { queues, sole } = await this.projectQueues(filter.project);
    await this.settle(queues);
    const page = await listJobs(this.db, { ...filter, project: sole ? null : filter.project });
    return { items: page.items.filter((j) => inProject(j.queue, filter.project!)), nextCursor: page.nextCursor };
  }

  /**
   * A job's dependencies `[{ref, id}]` as mirrored (see flows.ts), after the
   * project's queues are mirrored; null when PostgreSQL does not know the
   * job in `project`.
   */
  /** The flow fields of these jobs as mirrored (flows.ts readFlowFields), by job id; jobs outside flows absent. */
  flowFields(ids: string[]): Promise<Map<string, RestoreJobFlow>> {
    return readFlowFields(this.db, ids);
  }

  async dependenciesOf(jobId: string, project: string): Promise<FlowDependency[] | null> {
    await this.settle((await this.projectQueues(project)).queues);
    return dependenciesOf(this.db, jobId, project);
  }

  /**
   * A flow's jobs `[{id, ref, status, dependsOn}]` as mirrored (see
   * flows.ts), after the project's queues are mirrored; empty when
   * PostgreSQL knows none in `project`.
   */
  async flowJobs(flowId: string, project: string): Promise<FlowJob[]> {
    await this.settle((await this.projectQueues(project)).queues);
    return flowJobs(this.db, flowId, project);
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

  /** Dead-letter queue, newest failure first, keyset on (failed_at, job_id); `filter.project` as for {@link listJobs}. */
  async listDlq(filter: ListDlqFilter = {}): Promise<Page<Job>> {
    if (filter.queue !== undefined || filter.project == null) {
      await this.settle(filter.queue ? [filter.queue] : undefined);
      return listDlq(this.db, filter);
    }
    const { queues, sole } = await this.projectQueues(filter.project);
    await this.settle(queues);
    const page = await listDlq(this.db, { ...filter, project: sole ? null : filter.project });
    return { items: page.items.filter((j) => inProject(j.queue, filter.project!)), nextCursor: page.nextCursor };
  }

  /**
   * Dead-letter groups, largest first (see dlq-groups.ts). Rows an audit
   * writer of an older version left without a fingerprint get theirs first
   * (a probe of the fingerprint index when there are none). Only
   * `project`'s queues (`filter.queue` is a qualified name of it); the
   * groups' `queues` are qualified names.
   */
  async dlqGroups(project: string, filter: { queue?: string; limit?: number; fingerprint?: string } = {}): Promise<DlqGroup[]> {
    await this.settle(filter.queue !== undefined ? [filter.queue] : (await this.projectQueues(project)).queues);
    for (let i = 0; i < 10 && (await backfillFingerprints(this.db)) > 0; i++);
    return dlqGroups(this.db, project, filter);
  }

  /**
   * What the failure summaries of `groups` are made of (dlq-summary.ts):
   * hourly counts, the newest jobs (workers, attempts, payload keys), the
   * payload keys of jobs completed before each group began. Read without a
   * mirror barrier: it follows a {@link dlqGroups} call that waited.
   */
  dlqGroupFacts(scope: GroupScope, groups: DlqGroup[], now: number): Promise<{ facts: Map<string, GroupFacts>; samples: Map<string, SampleRow[]> }> {
    return groupFacts(this.db, scope, groups, now);
  }

  /** Exact counts per queue (live from Redis, terminal from Postgres). */
  async queueCounts(queues?: string[]): Promise<Record<string, QueueCounts>> {
    await this.settle(queues);
    return queueCounts(this.db, this.live.queues, queues);
  }

  /** Completed / failed in the last minute (of one project's queues; null = every project). */
  throughput(project: string | null = null): Promise<Throughput> {
    return throughput(this.db, this.live.connection, project);
  }

  /** Age of the oldest unmirrored audit event, ms, and the backlog size. */
  mirrorLag(): Promise<{ lagMs: number; pending: number }> {
    return mirrorLag(this.live.queues, this.live.mirror);
  }
}
