import { Inject, Injectable } from '@nestjs/common';
import { DlqGroup, HistoryQueries, ListDlqFilter, Page } from '../history';
import { GroupFacts, rulesSummary, RulesSummary, SUMMARY_HOURS } from '../core/dlq-summary';
import type { SluiceConfig } from '../config/config';
import { SLUICE_CONFIG } from '../config/config.module';
import { JobNotFoundError, SluiceError, ValidationError, WrongStateError } from '../core/errors';
import { FINGERPRINT_PATTERN } from '../core/error-fingerprint';
import { CachedSummary, cachedSummaries, requestSummary } from '../history/summary-cache';
import type { Job, Json } from '../core/job';
import { PayloadTooLargeError } from '../core/job-options';
import { DeadLetterStore, FlowRecordStore, QueueStore } from '../core/ports';
import { isTerminal, type JobStatus } from '../core/job-status';
import { JobsService } from './jobs.service';
import { bareQueue, inProject, qualify } from '../core/project-queue';
import type { RestoreJobFlow } from '../core/ports/restore';

/** A DLQ filter of the API (bare queue name) → the history's: the qualified queue, else the project. */
function scoped(filter: Omit<ListDlqFilter, 'project'>, project: string): ListDlqFilter {
  return filter.queue !== undefined ? { ...filter, queue: qualify(project, filter.queue) } : { ...filter, project };
}

/** A group's facts with bare queue names (what the API shows and the sentences name). */
function bareFacts(f: GroupFacts): GroupFacts {
  return { ...f, queues: f.queues.map(bareQueue), jobs: f.jobs.map((j) => ({ ...j, queue: bareQueue(j.queue) })) };
}

/** A model's summary of a group (API.md v1.3): its text beside the rules summary's fields (current); times epoch ms. */
export interface ModelSummary extends Omit<RulesSummary, 'kind'> {
  kind: 'model';
  nextStep: string;
  /** SUMMARY_MODEL that wrote it. */
  model: string;
  generatedAt: number;
  /** The group's size when it was written (made again once it has doubled). */
  summarizedCount: number;
  /** The rules summary's sentences. */
  rulesText: string;
}

/** The `summary` of a dead-letter group (API.md v1.3 "Failure summaries"); times epoch ms. */
export type GroupSummary = RulesSummary | ModelSummary;

/** The rules summary, or the model's when one was made for the group (a failed call keeps the last one made, if any). */
function withModel(rules: RulesSummary, c: CachedSummary | undefined): GroupSummary {
  if (!c || c.text === null || c.generatedAt === null) return rules;
  return {
    ...rules, kind: 'model', text: c.text, nextStep: c.nextStep ?? '', model: c.model ?? '', generatedAt: c.generatedAt,
    summarizedCount: c.summarizedCount ?? rules.count, rulesText: rules.text,
  };
}

/** DLQ pages read (and retried) per round of a bulk retry. */
const BULK_PAGE = 500;
/** Retry scripts in flight at once during a bulk retry. */
const BULK_PARALLEL = 50;
/** Dead-letter jobs deleted per purge script call (one call never holds Redis long). */
const PURGE_CHUNK = 500;

/**
 * Dead-letter queue use cases (API.md "Dead-letter queue"): list from the
 * PostgreSQL copy, retry one or many (each retry one atomic script), purge.
 */
@Injectable()
export class DlqService {
  constructor(
    @Inject(SLUICE_CONFIG) private readonly config: SluiceConfig,
    private readonly deadLetters: DeadLetterStore,
    private readonly queues: QueueStore,
    private readonly history: HistoryQueries,
    private readonly jobs: JobsService,
    private readonly flows: FlowRecordStore,
  ) {}

  /**
   * One page of `project`'s DLQ, newest failure first (HistoryQueries.listDlq); `filter.queue` is the bare name.
   * @throws ValidationError (400) on a bad limit or cursor.
   */
  list(filter: Omit<ListDlqFilter, 'project'>, project: string): Promise<Page<Job>> {
    return this.history.listDlq(scoped(filter, project));
  }

  /**
   * `project`'s DLQ grouped by fingerprint, largest group first (API.md v1.1
   * "Dead-letter groups"); `filter.queue` and the groups' `queues` are bare names.
   * @param project the caller's project: only its queues' dead-letter jobs are grouped.
   * @throws ValidationError (400) on a bad limit.
   */
  async groups(project: string, filter: { queue?: string; limit?: number; fingerprint?: string }): Promise<(DlqGroup & { summary: GroupSummary })[]> {
    const queue = filter.queue !== undefined ? qualify(project, filter.queue) : undefined;
    const groups = await this.history.dlqGroups(project, { ...filter, queue });
    const now = Date.now();
    const [{ facts }, cached] = await Promise.all([
      this.history.dlqGroupFacts({ queue, project }, groups, now),
      this.config.summaryModelUrl ? cachedSummaries(this.history.db, project, groups.map((g) => g.fingerprint)) : new Map<string, CachedSummary>(),
    ]);
    return groups.map((g) => {
      const f = facts.get(g.fingerprint) ?? { ...g, hourly: new Array<number>(SUMMARY_HOURS).fill(0), jobs: [], earlierKeys: null };
      const rules = rulesSummary(bareFacts(f), now);
      return { ...g, queues: g.queues.map(bareQueue), summary: withModel(rules, cached.get(g.fingerprint)) };
    });
  }

  /**
   * `POST /jobs/dlq/groups/:fingerprint/summary`: asks the scheduler role to
   * summarize `project`'s group again with the model (at its next pass, within
   * the hourly budget); the group read never waits for it.
   * @returns `queued` false when no model is configured (the rules summary is always current), and the summary as it is now.
   * @throws ValidationError (400) for a malformed fingerprint; SluiceError not_found (404) when `project` has no such group.
   */
  async summarizeAgain(project: string, fingerprint: string): Promise<{ fingerprint: string; queued: boolean; summary: GroupSummary }> {
    if (!FINGERPRINT_PATTERN.test(fingerprint)) {
      throw new ValidationError('invalid fingerprint', [{ path: 'fingerprint', message: 'must be 16 lowercase hexadecimal characters (a group of GET /jobs/dlq/groups)' }]);
    }
    const [group] = await this.groups(project, { fingerprint, limit: 1 });
    if (!group) throw new SluiceError('not_found', `no dead-letter group ${fingerprint} in this project`);
    if (!this.config.summaryModelUrl) return { fingerprint, queued: false, summary: group.summary };
    await requestSummary(this.history.db, project, fingerprint);
    return { fingerprint, queued: true, summary: group.summary };
  }

  /**
   * Puts a failed (or cancelled) job back in waiting with attempts 0 and a
   * `retried_from_dlq` event, optionally with a new payload. A cancelled job
   * that Redis has already pruned is recreated from its PostgreSQL copy.
   * @returns the job as the retry left it (status waiting).
   * @throws JobNotFoundError (404); WrongStateError (409) for any other
   *   status; SluiceError conflict (409) for a failed job no longer in Redis
   *   (purged from the DLQ) or a cancelled one only the history holds that
   *   finished more than RETENTION_DAYS less an hour ago; PayloadTooLargeError (413).
   */
  async retry(id: string, project: string, payload?: Record<string, Json>): Promise<Job> {
    if (payload !== undefined) this.checkSize(payload);
    const job = await this.jobs.get(id, project);
    if (job.status !== 'failed' && job.status !== 'cancelled') throw new WrongStateError(id, job.status, 'retry (only failed or cancelled jobs can be)');
    // The flow fields the check read serve the revive below too (one read, not two).
    const spec = job.status === 'cancelled' && job.flowId ? await this.checkDependencies(job, project) : null;
    try {
      return await this.deadLetters.retryAndGet(job.queue, id, payload);
    } catch (e) {
      if (!(e instanceof JobNotFoundError)) throw e;
    }
    // No hash in Redis: pruned (cancelled, once mirrored) or purged (failed).
    const copy = await this.jobs.get(id, project);
    if (copy.status !== 'cancelled') {
      throw new SluiceError('conflict', `job ${id} is ${copy.status} but no longer in the dead-letter queue (purged); its history stays readable, it cannot be retried`);
    }
    // Retention retires the history of jobs finished before its cutoff (src/postgres/partition-retire.ts counts on
    // such a row never changing again): one finished within an hour of the cutoff is past bringing back.
    if (copy.finishedAt !== null && copy.finishedAt < Date.now() - this.config.retentionDays * 86_400_000 + 3_600_000) {
      throw new SluiceError('conflict', `job ${id} was cancelled about ${this.config.retentionDays} days ago (RETENTION_DAYS): its history is leaving the retention window, it cannot be retried`);
    }
    // A flow job keeps its flow fields: its end reaches the flow again, and the retry brings back the dependents it cancelled.
    const flow = copy.flowId ? (spec ?? (await this.history.flowFields([id])).get(id) ?? null) : null;
    const revived = await this.deadLetters.revive({
      id, queue: copy.queue, type: copy.type, payload: JSON.stringify(payload ?? copy.payload), newPayload: payload !== undefined,
      priority: copy.priority, maxAttempts: copy.maxAttempts, timeoutMs: copy.timeoutMs, backoff: copy.backoff,
      createdAt: copy.createdAt, executionSeq: copy.executionSeq, idempotencyKey: copy.idempotencyKey, concurrencyKey: copy.concurrencyKey, flow,
    });
    // null: a concurrent retry recreated it first; retryJob then answers by its state.
    return revived ?? this.deadLetters.retryAndGet(copy.queue, id, payload);
  }

  /**
   * Retries every dead-letter job matching the filter (queue, type and
   * fingerprint, all that are given), paging through the
   * DLQ listing (keyset, so jobs that fail again meanwhile are not retried
   * twice). Jobs retried or purged by someone else meanwhile are skipped.
   * Only `project`'s dead-letter jobs (`filter.queue` is the bare name).
   * @returns how many jobs were put back in waiting.
   */
  async retryAll(filter: { queue?: string; type?: string; fingerprint?: string }, project: string): Promise<number> {
    let retried = 0;
    let cursor: string | undefined;
    do {
      const page = await this.history.listDlq(scoped({ ...filter, cursor, limit: BULK_PAGE }, project));
      for (let i = 0; i < page.items.length; i += BULK_PARALLEL) {
        const done = await Promise.all(
          page.items.slice(i, i + BULK_PARALLEL).map((j) =>
            this.deadLetters.retry(j.queue, j.id).then(
              () => 1,
              (e) => {
                if (e instanceof JobNotFoundError || e instanceof WrongStateError) return 0;
                throw e;
              },
            ),
          ),
        );
        retried += done.reduce((a: number, b: number) => a + b, 0);
      }
      cursor = page.nextCursor ?? undefined;
    } while (cursor);
    return retried;
  }

  /**
   * Deletes the dead-letter jobs of one queue (or of every queue of
   * `project`, never another's) from Redis, each with a `purged` event: the
   * audit rows and the job's history stay, the DLQ listing drops them once mirrored.
   * @param queue the bare name.
   * @returns how many jobs were purged.
   */
  async purge(queue: string | undefined, project: string): Promise<number> {
    const queues = queue !== undefined ? [qualify(project, queue)] : (await this.queues.list()).filter((q) => inProject(q, project));
    let purged = 0;
    for (const q of queues) {
      for (let more = true; more; ) {
        const r = await this.deadLetters.purge(q, PURGE_CHUNK);
        purged += r.purged;
        more = r.more;
      }
    }
    return purged;
  }

  /**
   * A cancelled flow job may have been cancelled while `blocked` (by hand,
   * or for a failed dependency): a retry puts it straight into waiting, so it
   * is refused while its dependencies do not allow it to run — not all
   * completed (policy `cancel`), not all ended (policy `run`). A dependency
   * neither Redis nor PostgreSQL knows any more counts as met (as the
   * restore counts it). A completed dependency stays completed, so an answer
   * "met" cannot turn stale before the retry.
   * @returns the job's flow fields as read (its hash, else the history), null when neither has them.
   * @throws SluiceError conflict (409) naming the dependencies in the way.
   */
  private async checkDependencies(job: Job, project: string): Promise<RestoreJobFlow | null> {
    const spec = (await this.flows.placement(job.queue, job.id)) ?? (await this.history.flowFields([job.id])).get(job.id) ?? null;
    if (!spec?.dependsOn.length) return spec;
    const statuses = await Promise.all(
      spec.dependsOn.map((d) =>
        this.jobs.get(d.id, project).then(
          (j): JobStatus | null => j.status,
          (e) => {
            if (e instanceof JobNotFoundError) return null;
            throw e;
          },
        ),
      ),
    );
    const unmet = spec.dependsOn.filter((_, i) => {
      const s = statuses[i];
      return s !== null && (spec.policy === 'run' ? !isTerminal(s) : s !== 'completed');
    });
    if (!unmet.length) return spec;
    const named = unmet.slice(0, 10).map((d) => `${d.ref} (${statuses[spec.dependsOn.indexOf(d)]})`).join(', ');
    throw new SluiceError(
      'conflict',
      `job ${job.id} waits in its flow for dependencies that have not ${spec.policy === 'run' ? 'ended' : 'completed'}: ${named}${unmet.length > 10 ? `, … (${unmet.length})` : ''}; ` +
        (spec.policy === 'run' ? 'retry it once they have' : 'retry it once they have completed, or retry the failed one (the dependents it cancelled come back with it)'),
    );
  }

  private checkSize(payload: Record<string, Json>): void {
    const bytes = Buffer.byteLength(JSON.stringify(payload), 'utf8');
    if (bytes > this.config.maxPayloadBytes) throw new PayloadTooLargeError(this.config.maxPayloadBytes);
  }
}
