import type { paths } from './schema';

/**
 * Issue 20 (flow control per key, API.md v1.1 "Flow control per key" and v1.2
 * "overrides for one key") as the console reads it, for as long as the generated
 * schema (clients/typescript/src/schema.d.ts) does not have it yet.
 *
 * Every declaration here is merged only where the generated one is missing
 * ({@link Pending}: `Omit<P, keyof Generated>`), so once `npm run generate -w
 * @sluice/client` brings the fields and the paths, the generated types win by
 * themselves and this file can be deleted (with the two `Pending` uses in
 * client.ts and types.ts). The new queue and job fields are optional here: a
 * server without issue 20 does not send them.
 */
export type Pending<Generated, P> = Generated & Omit<P, keyof Generated>;

/** A cap on starts per window: `max` 1..10,000 per `durationMs` 1..86,400,000. */
export interface PendingRateLimit {
  max: number;
  /** window, ms */
  durationMs: number;
}

/** Limits of one key: concurrency 1..100,000 or null, rate limit or null. */
export interface PendingKeyLimits {
  concurrency: number | null;
  rateLimit: PendingRateLimit | null;
}

/** `GET /queues/:name/keys` item. */
export interface PendingQueueKey {
  key: string;
  /** ready jobs of the key (waiting) */
  waiting: number;
  /** jobs of the key held by workers */
  active: number;
  /** the key's own limits, replacing the queue's for it; null when it has none */
  overrides: PendingKeyLimits | null;
  /** the limits that apply to the key: its override, else the queue's keyConcurrency / keyRateLimit */
  limits: PendingKeyLimits;
}

/** The queue fields of issue 20 (`GET /queues`, `GET /queues/:name`). */
export interface PendingQueueFields {
  /** at most this many active jobs per key; null = none */
  keyConcurrency?: number | null;
  /** at most `max` starts per key per window; null = none */
  keyRateLimit?: PendingRateLimit | null;
  /** how claims pick among keys (the effective value) */
  fairness?: 'fifo' | 'round_robin';
  /** a waiting job's priority rises by 1 per this many ms (bounded at 100); null = no aging */
  agingMs?: number | null;
}

/** The job field of issue 20 (a schedule's too: its jobs are enqueued with it). */
export interface PendingJobFields {
  /** the job's concurrency key (1..128 characters), null when it has none */
  concurrencyKey?: string | null;
}

interface JsonAnswer<T> {
  headers: { [name: string]: unknown };
  content: { 'application/json': T };
}
interface NoOtherMethods {
  post?: never;
  options?: never;
  head?: never;
  patch?: never;
  trace?: never;
}
interface NoParameters {
  parameters: { query?: never; header?: never; path?: never; cookie?: never };
}

/** The two key routes, in openapi-typescript's shape so openapi-fetch types the calls. */
interface PendingPaths {
  '/queues/{name}/keys': NoParameters &
    NoOtherMethods & {
      /** The busiest keys (waiting + active), then keys with only an override (viewer). */
      get: {
        parameters: { query?: { limit?: number }; header?: never; path: { name: string }; cookie?: never };
        requestBody?: never;
        responses: { 200: JsonAnswer<{ items: PendingQueueKey[] }> };
      };
      put?: never;
      delete?: never;
    };
  '/queues/{name}/keys/{key}': NoParameters &
    NoOtherMethods & {
      get?: never;
      /** Set (merge) one key's override; absent fields stay, null clears one (operator). */
      put: {
        parameters: { query?: never; header?: never; path: { name: string; key: string }; cookie?: never };
        requestBody: { content: { 'application/json': { concurrency?: number | null; rateLimit?: PendingRateLimit | null } } };
        responses: { 200: JsonAnswer<PendingQueueKey> };
      };
      /** Remove one key's override (operator). */
      delete: {
        parameters: { query?: never; header?: never; path: { name: string; key: string }; cookie?: never };
        requestBody?: never;
        responses: { 200: JsonAnswer<PendingQueueKey> };
      };
    };
}

/** The generated paths, plus the key routes while the generated document lacks them. */
export type PathsWithPending = Pending<paths, PendingPaths>;
