import { client, unwrap } from './client';
import type { DlqGroup, Job, Page } from './types';

export const dlqGroups = (queue?: string) => unwrap<{ items: DlqGroup[] }>(client.GET('/jobs/dlq/groups', { params: { query: { queue } } }));
/** `GET /jobs/dlq/all`: a page of failed jobs, narrowed by queue, type and/or fingerprint (one group). */
export const dlqJobs = (q: { queue?: string; type?: string; fingerprint?: string }, cursor?: string, limit = 50) =>
  unwrap<Page<Job>>(client.GET('/jobs/dlq/all', { params: { query: { ...q, cursor, limit } } }));
/** `POST /jobs/dlq/retry` by fingerprint (API.md v1.1), or by queue/type. */
export const retryDlq = (by: { fingerprint?: string; queue?: string; type?: string }) =>
  unwrap<{ retried: number }>(client.POST('/jobs/dlq/retry', { body: by }));
export const purgeDlq = (queue?: string) => unwrap<{ purged: number }>(client.DELETE('/jobs/dlq', { params: { query: { queue } } }));
