import { Inject, Injectable, OnApplicationBootstrap, OnApplicationShutdown, Optional } from '@nestjs/common';
import type { DataSource } from 'typeorm';
import type { SluiceConfig } from '../config/config';
import { LOGGER, SLUICE_CONFIG } from '../config/config.module';
import type { Logger } from '../logging/logger';
import { POSTGRES_DB } from '../postgres/postgres.module';
import { ProjectRegistry, QueueStore } from '../core/ports';
import { bareQueue, DEFAULT_PROJECT } from '../core/project-queue';
import { buildSummaryRequest, readSummaryAnswer, SummaryInput } from '../core/summary-request';
import { dlqGroups, DlqGroup } from '../history/dlq-groups';
import { groupFacts } from '../history/dlq-summary';
import { anyPendingRequest, CachedSummary, cachedSummaries, callsInLastHour, logCall, pendingRequests, pruneCalls, pruneSummaries, storeFailure, storeSummary } from '../history/summary-cache';
import { callModel } from './summary-model';

/** pg advisory lock held by the one scheduler replica summarizing at a time (the hourly budget is then exact). */
const SUMMARY_LOCK = 774413;
/** The largest groups of each project the model summarizes (the others keep their rules summary). */
export const MODEL_GROUPS_PER_PROJECT = 20;
/** How often the scheduler looks for a request to summarize again between passes, ms (one tiny query). */
const REQUEST_CHECK_MS = 1000;

/** A group whose model call failed is tried again after this long, ms (a request to summarize again tries at once). */
export const RETRY_AFTER_FAILURE_MS = 600_000;

/** Why a group is due for a model call now, or null (see {@link Summarizer}). */
export function dueReason(c: CachedSummary | undefined, count: number, now: number): 'requested' | 'new' | 'doubled' | null {
  const generated = c?.generatedAt ?? -Infinity;
  const failed = c?.failedAt ?? -Infinity;
  if (c?.requestedAt != null && c.requestedAt > generated && c.requestedAt > failed) return 'requested';
  if (failed > generated && now - failed < RETRY_AFTER_FAILURE_MS) return null;
  if (!c || c.generatedAt === null) return 'new';
  if (c.summarizedCount !== null && count >= 2 * c.summarizedCount) return 'doubled';
  return null;
}

/**
 * Failure summaries by a model (API.md v1.3, docs/failure-summaries.md): the
 * scheduler role's loop, off every request path (a group read never waits on
 * a model). Every SUMMARY_INTERVAL_MS (and within a second of an operator's
 * request to summarize again), under a PostgreSQL advisory lock (one
 * replica at a time), within SUMMARY_MAX_PER_HOUR calls over the last hour
 * (`summary_model_calls`): the {@link MODEL_GROUPS_PER_PROJECT} largest
 * groups of each project, and any group an operator asked to summarize again,
 * get one chat-completions call each when they have no model summary yet,
 * have doubled since theirs, or were asked for; requests first, then the
 * largest. The request body is built by src/core/summary-request.ts alone. A
 * call that fails or times out is recorded (`failed_at`) and the group keeps
 * its rules summary (tried again after {@link RETRY_AFTER_FAILURE_MS}).
 * Nothing of SUMMARY_MODEL_KEY, the request or the answer is logged.
 */
@Injectable()
export class Summarizer implements OnApplicationBootstrap, OnApplicationShutdown {
  private timer: NodeJS.Timeout | null = null;
  private running: Promise<unknown> | null = null;
  private failuresLoggedAt = 0;

  constructor(
    @Inject(SLUICE_CONFIG) private readonly config: SluiceConfig,
    @Inject(LOGGER) private readonly log: Logger,
    private readonly queues: QueueStore,
    private readonly projects: ProjectRegistry,
    @Optional() @Inject(POSTGRES_DB) private readonly db?: DataSource,
  ) {}

  onApplicationBootstrap(): void {
    if (!this.db || !this.config.summaryModelUrl) return;
    let lastPass = 0;
    const every = Math.min(REQUEST_CHECK_MS, this.config.summaryIntervalMs);
    this.timer = setInterval(() => {
      if (this.running) return;
      const db = this.db as DataSource;
      // A full pass every SUMMARY_INTERVAL_MS; sooner when an operator asked for a summary.
      const due = async () => Date.now() - lastPass >= this.config.summaryIntervalMs || (await anyPendingRequest(db));
      this.running = due()
        .then(async (go) => {
          if (!go) return;
          lastPass = Date.now();
          await this.tick();
        })
        .catch((e: unknown) => {
          if (Date.now() - this.failuresLoggedAt > 60_000) {
            this.failuresLoggedAt = Date.now();
            this.log.warn({ err: (e as Error).message }, 'failure summaries: pass failed (tried again at the next interval)');
          }
        })
        .finally(() => (this.running = null));
    }, every);
    this.timer.unref?.();
  }

  async onApplicationShutdown(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    await this.running;
  }

  /**
   * One pass (see the class comment), unless another replica is in one.
   * @returns the model calls made (null when skipped: no model, no database, or the lock is held elsewhere).
   */
  async tick(now = Date.now()): Promise<number | null> {
    const db = this.db;
    if (!db || !this.config.summaryModelUrl) return null;
    const qr = db.createQueryRunner();
    try {
      const [{ got }] = (await qr.query('SELECT pg_try_advisory_lock($1) AS got', [SUMMARY_LOCK])) as { got: boolean }[];
      if (!got) return null;
      try {
        return await this.pass(db, now);
      } finally {
        await qr.query('SELECT pg_advisory_unlock($1)', [SUMMARY_LOCK]);
      }
    } finally {
      await qr.release();
    }
  }

  private async pass(db: DataSource, now: number): Promise<number> {
    let left = this.config.summaryMaxPerHour - (await callsInLastHour(db));
    if (left <= 0) return 0;
    await pruneCalls(db);
    await pruneSummaries(db, this.config.retentionDays);
    const projects = [...new Set([DEFAULT_PROJECT, ...Object.keys(await this.projects.all())])];
    const due: { project: string; group: DlqGroup; requested: boolean }[] = [];
    for (const project of projects) {
      const groups = await dlqGroups(db, project, { limit: MODEL_GROUPS_PER_PROJECT });
      for (const p of await pendingRequests(db, project, MODEL_GROUPS_PER_PROJECT)) {
        if (groups.some((g) => g.fingerprint === p.fingerprint)) continue;
        const [asked] = await dlqGroups(db, project, { fingerprint: p.fingerprint, limit: 1 });
        // A group retried or purged since it was asked for: the request is answered (nothing to summarize).
        if (asked) groups.push(asked);
        else await storeFailure(db, project, p.fingerprint, 'the group has left the dead-letter queue');
      }
      const cache = await cachedSummaries(db, project, groups.map((g) => g.fingerprint));
      for (const group of groups) {
        const why = dueReason(cache.get(group.fingerprint), group.count, now);
        if (why) due.push({ project, group, requested: why === 'requested' });
      }
    }
    due.sort((a, b) => Number(b.requested) - Number(a.requested) || b.group.count - a.group.count);
    let made = 0;
    for (const d of due) {
      if (left-- <= 0) break;
      await this.summarize(db, d.project, d.group, now);
      made++;
    }
    return made;
  }

  /** One model call for one group; its outcome stored (the summary, or the failure) and counted. */
  private async summarize(db: DataSource, project: string, group: DlqGroup, now: number): Promise<void> {
    const { facts, samples } = await groupFacts(db, { project }, [group], now);
    const rows = samples.get(group.fingerprint) ?? [];
    const optIn = new Map<string, boolean>();
    for (const q of new Set(rows.map((r) => r.queue))) optIn.set(q, (await this.queues.settings(q))?.summaryIncludesPayload ?? false);
    const input: SummaryInput = {
      sample: group.sample,
      count: group.count,
      hourly: facts.get(group.fingerprint)?.hourly ?? [],
      types: group.types,
      queues: group.queues.map(bareQueue),
      attempts: [...new Set(rows.map((r) => r.attempts))].sort((a, b) => a - b),
      firstAt: new Date(group.firstAt).toISOString(),
      lastAt: new Date(group.lastAt).toISOString(),
      jobs: rows.map((r) => ({ queue: bareQueue(r.queue), payload: r.payload, error: r.lastError, includePayload: optIn.get(r.queue) === true })),
    };
    const body = buildSummaryRequest(input, this.config.summaryModel);
    try {
      const answer = readSummaryAnswer(await callModel(this.config.summaryModelUrl as string, this.config.summaryModelKey, body, this.config.summaryTimeoutMs));
      await logCall(db, project, group.fingerprint, 'ok');
      await storeSummary(db, project, group.fingerprint, { ...answer, model: this.config.summaryModel, count: group.count });
    } catch (e) {
      const why = (e as Error).message;
      await logCall(db, project, group.fingerprint, 'failed');
      await storeFailure(db, project, group.fingerprint, why);
      this.log.warn({ project, fingerprint: group.fingerprint, err: why }, 'failure summary: the model gave none, the rules summary stays');
    }
  }
}
