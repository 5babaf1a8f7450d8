import { client, unwrap } from './client';
import type { Execution, Job, JobEvent, JobStatus, LogLine, Page } from './types';

/**
 * Explorer filters (URL query of /ui/jobs): every field optional. `from`/`to`
 * are ISO times (created in [from, to)); `payload` is a JSON object the payload
 * must contain (`{"orderId": 42}`), which the server accepts only with `from` (≤ 31 days);
 * `flowId` keeps the jobs of one flow (POST /flows), a UUID.
 */
export interface JobFilter {
  queue?: string;
  status?: JobStatus;
  type?: string;
  from?: string;
  to?: string;
  payload?: string;
  flowId?: string;
}

/** `GET /jobs`: one keyset page, newest first. */
export const listJobs = (f: JobFilter, cursor?: string, limit = 50) =>
  unwrap<Page<Job>>(client.GET('/jobs', { params: { query: { ...f, cursor, limit } } }));
export const getJob = (id: string) => unwrap<Job>(client.GET('/jobs/{id}', { params: { path: { id } } }));
export const jobEvents = (id: string) => unwrap<{ items: JobEvent[] }>(client.GET('/jobs/{id}/events', { params: { path: { id } } }));
export const jobExecutions = (id: string) => unwrap<{ items: Execution[] }>(client.GET('/jobs/{id}/executions', { params: { path: { id } } }));
export const jobLogs = (id: string) => unwrap<{ items: LogLine[] }>(client.GET('/jobs/{id}/logs', { params: { path: { id } } }));
/** `DELETE /jobs/:id`: 200 cancelled, 202 cancel requested (active), 409 terminal. */
export const cancelJob = (id: string) => unwrap<Job>(client.DELETE('/jobs/{id}', { params: { path: { id } } }));
/** `POST /jobs/:id/retry`, optionally with a new payload (only failed or cancelled jobs; else 409). */
export const retryJob = (id: string, payload?: Record<string, unknown>) =>
  unwrap<Job>(client.POST('/jobs/{id}/retry', { params: { path: { id } }, body: payload === undefined ? {} : { payload } }));

/**
 * The `POST /jobs` body of a copy of `job` (same queue, type, priority, attempts, backoff, timeout and
 * concurrency key, so the copy is held to the same per-key limits; no idempotency key, no debounce).
 */
export function cloneBody(job: Job, payload: Record<string, unknown>) {
  const body = { queue: job.queue, type: job.type, payload, priority: job.priority, maxAttempts: job.maxAttempts, backoff: job.backoff, timeoutMs: job.timeoutMs };
  return job.concurrencyKey == null ? body : { ...body, concurrencyKey: job.concurrencyKey };
}
export const enqueueJob = (body: ReturnType<typeof cloneBody>) => unwrap<Job>(client.POST('/jobs', { body }));
