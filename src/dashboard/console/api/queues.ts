import { client, unwrap } from './client';
import type { Backoff, KeyLimits, Queue, QueueKey } from './types';

/** `PUT /queues/:name` body (API.md "Queues", v1.1 flow control per key): every field optional; null clears a limit. */
export interface QueueSettings {
  maxConcurrency?: number | null;
  rateLimit?: { max: number; durationMs: number } | null;
  defaults?: { maxAttempts?: number; backoff?: Backoff; timeoutMs?: number };
  external?: boolean;
  /** at most this many active jobs per concurrency key, 1..100,000; null = none */
  keyConcurrency?: number | null;
  /** per key: `max` 1..10,000 starts per `durationMs` 1..86,400,000; null = none */
  keyRateLimit?: { max: number; durationMs: number } | null;
  /** null = back to the default (fifo, round_robin once the queue has keyed jobs) */
  fairness?: 'fifo' | 'round_robin' | null;
  /** 1,000..86,400,000 ms per priority step; null = no aging */
  agingMs?: number | null;
}

/** `PUT /queues/:name/keys/:key` body: absent fields stay, null clears one. */
export type KeyOverride = Partial<KeyLimits>;

export const listQueues = () => unwrap<Queue[]>(client.GET('/queues'));
export const getQueue = (name: string) => unwrap<Queue>(client.GET('/queues/{name}', { params: { path: { name } } }));
export const configureQueue = (name: string, body: QueueSettings) =>
  unwrap<Queue>(client.PUT('/queues/{name}', { params: { path: { name } }, body: body as never }));
export const pauseQueue = (name: string) => unwrap<Queue>(client.POST('/queues/{name}/pause', { params: { path: { name } } }));
export const resumeQueue = (name: string) => unwrap<Queue>(client.POST('/queues/{name}/resume', { params: { path: { name } } }));

/** `GET /queues/:name/keys?limit=`: the busiest keys (waiting + active), then keys with only an override. */
export const listQueueKeys = (name: string, limit: number) =>
  unwrap<{ items: QueueKey[] }>(client.GET('/queues/{name}/keys', { params: { path: { name }, query: { limit } } }));

/**
 * Refuses a key the URL cannot carry as one path segment: empty, or `.` / `..`
 * — a browser's URL parser resolves those dot segments (WHATWG URL, even
 * percent-encoded as `%2E%2E`), so `PUT /queues/q/keys/..` would leave as
 * `PUT /queues/q/`: another route (404 on Sluice today; the queue itself on a
 * server that ignores trailing slashes). Any other key is fine: openapi-fetch
 * encodes path parameters with encodeURIComponent (`a/b` → `a%2Fb`). Length
 * (1..128) is the server's to check.
 * @throws Error for such a key; nothing is sent.
 */
export function checkKeySegment(key: string): void {
  if (key === '') throw new Error('a key cannot be empty');
  if (key === '.' || key === '..') throw new Error(`the key "${key}" cannot be addressed in a URL (a dot segment)`);
}

/** `PUT /queues/:name/keys/:key` (operator): the key item with its override now stored. */
export async function setKeyOverride(name: string, key: string, body: KeyOverride): Promise<QueueKey> {
  checkKeySegment(key);
  return unwrap<QueueKey>(client.PUT('/queues/{name}/keys/{key}', { params: { path: { name, key } }, body }));
}

/** `DELETE /queues/:name/keys/:key` (operator): the key item, its overrides null. */
export async function removeKeyOverride(name: string, key: string): Promise<QueueKey> {
  checkKeySegment(key);
  return unwrap<QueueKey>(client.DELETE('/queues/{name}/keys/{key}', { params: { path: { name, key } } }));
}
