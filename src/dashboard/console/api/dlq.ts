import { client, unwrap } from './client';
import type { DlqGroup, Job, Page } from './types';

export const dlqGroups = (queue?: string) => unwrap<{ items: DlqGroup[] }>(client.GET('/jobs/dlq/groups', { params: { query: { queue } } }));
/** `GET /jobs/dlq/all`: a page of failed jobs, narrowed by queue, type and/or fingerprint (one group). */
export const dlqJobs = (q: { queue?: string; type?: string; fingerprint?: string }, cursor?: string, limit = 50) =>
  unwrap<Page<Job>>(client.GET('/jobs/dlq/all', { params: { query: { ...q, cursor, limit } } }));
/** `POST /jobs/dlq/retry` by fingerprint (API.md v1.1), or by queue/type. */
export const retryDlq = (by: { fingerprint?: string; queue?: string; type?: string }) =>
  unwrap<{ retried: number }>(client.POST('/jobs/dlq/retry', { body: by }));
/** `POST /jobs/dlq/groups/:fingerprint/summary` (API.md v1.3): the model summarizes the group again at the scheduler's next pass. */
export const summarizeGroup = (fingerprint: string) =>
  unwrap<{ fingerprint: string; queued: boolean }>(client.POST('/jobs/dlq/groups/{fingerprint}/summary', { params: { path: { fingerprint } } }));
export const purgeDlq = (queue?: string) => unwrap<{ purged: number }>(client.DELETE('/jobs/dlq', { params: { query: { queue } } }));
