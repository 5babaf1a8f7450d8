import { client, unwrap } from './client';
import type { Backoff, Queue } from './types';

/** `PUT /queues/:name` body (API.md "Queues"): every field optional; null clears a limit. */
export interface QueueSettings {
  maxConcurrency?: number | null;
  rateLimit?: { max: number; durationMs: number } | null;
  defaults?: { maxAttempts?: number; backoff?: Backoff; timeoutMs?: number };
  external?: boolean;
}

export const listQueues = () => unwrap<Queue[]>(client.GET('/queues'));
export const getQueue = (name: string) => unwrap<Queue>(client.GET('/queues/{name}', { params: { path: { name } } }));
export const configureQueue = (name: string, body: QueueSettings) =>
  unwrap<Queue>(client.PUT('/queues/{name}', { params: { path: { name } }, body: body as never }));
export const pauseQueue = (name: string) => unwrap<Queue>(client.POST('/queues/{name}/pause', { params: { path: { name } } }));
export const resumeQueue = (name: string) => unwrap<Queue>(client.POST('/queues/{name}/resume', { params: { path: { name } } }));
