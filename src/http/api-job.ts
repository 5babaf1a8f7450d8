import type { ClaimedJob, Job } from '../core/job';
import { jobFingerprint } from '../core/error-fingerprint';
import { clampTime } from '../core/job-options';

/**
 * ISO-8601 UTC string of an epoch-ms time; null (and NaN) stays null. A time
 * beyond the Date range (±8.64e15 ms) renders as its end rather than throw.
 */
export function iso(ms: number | null | undefined): string | null {
  return ms === null || ms === undefined || Number.isNaN(ms) ? null : new Date(clampTime(ms)).toISOString();
}

/** `T` with the epoch-ms fields `K` rendered as ISO-8601 strings (null stays null): the API shape of an engine/history type. */
export type WithIsoTimes<T, K extends keyof T> = Omit<T, K> & { [P in K]: string | null };

/**
 * The API.md job object: the engine's Job with its times as ISO strings
 * (`executionSeq` and `cancelRequested` are additions), and v1.1's
 * `fingerprint` (null unless failed).
 */
export type ApiJob = WithIsoTimes<Job, 'createdAt' | 'runAt' | 'startedAt' | 'finishedAt' | 'updatedAt'> & { fingerprint: string | null };

/** Renders an engine Job (epoch ms) as the API job object; a failed job's fingerprint is computed from lastError unless the DLQ copy stored one. */
export function toApiJob(j: Job): ApiJob {
  return {
    ...j,
    fingerprint: jobFingerprint(j),
    createdAt: iso(j.createdAt),
    runAt: iso(j.runAt),
    startedAt: iso(j.startedAt),
    finishedAt: iso(j.finishedAt),
    updatedAt: iso(j.updatedAt),
  };
}

/** A claimed job as the external worker protocol returns it: the job plus its lease. */
export function toApiClaimedJob(j: ClaimedJob): ApiJob & { lockToken: string; leaseExpiresAt: string | null } {
  return { ...toApiJob(j), lockToken: j.lockToken, leaseExpiresAt: iso(j.leaseExpiresAt) };
}
