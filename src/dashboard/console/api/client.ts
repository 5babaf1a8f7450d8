import createClient from 'openapi-fetch';
import type { PathsWithPending } from './pending-schema';
import type { FieldError } from './types';

/** Every path the console calls: the generated document's (plus issue 20's key routes until it has them: pending-schema.ts). */
export type Paths = PathsWithPending;

/**
 * A non-2xx answer in the API.md error envelope (`code`, `message`, field
 * `details` on 400), or a network failure (`status` 0, code `network`).
 */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly details: FieldError[] = [],
    readonly requestId?: string,
  ) {
    super(message);
    this.name = 'ApiError';
  }

  /** The details of one field, by its path (`rateLimit.max`), for a form. */
  fieldErrors(): Record<string, string> {
    const out: Record<string, string> = {};
    for (const d of this.details) out[d.path] = out[d.path] ? `${out[d.path]}; ${d.message}` : d.message;
    return out;
  }
}

/**
 * The one HTTP client of the console (openapi-fetch over the generated types):
 * same origin, the session cookie rides along; JSON only. Nothing else in the app calls fetch.
 */
export const client = createClient<Paths>({ baseUrl: typeof location === 'undefined' ? '' : location.origin, credentials: 'same-origin', headers: { accept: 'application/json' } });

interface FetchResult {
  data?: unknown;
  error?: unknown;
  response: Response;
}

/**
 * Unwraps an openapi-fetch answer: its body typed as `T` (the contract shape), or an {@link ApiError}.
 * @throws ApiError on a non-2xx answer or a network error.
 */
export async function unwrap<T>(call: Promise<FetchResult>): Promise<T> {
  let r: FetchResult;
  try {
    r = await call;
  } catch (e) {
    throw new ApiError(0, 'network', `the server could not be reached (${(e as Error).message})`);
  }
  if (r.response.ok) return r.data as T;
  const env = (r.error as { error?: { code?: string; message?: string; details?: FieldError[]; requestId?: string } } | undefined)?.error;
  throw new ApiError(r.response.status, env?.code ?? `http_${r.response.status}`, env?.message ?? r.response.statusText ?? 'request failed', Array.isArray(env?.details) ? env.details : [], env?.requestId);
}

/**
 * The Prometheus text of `GET /metrics` (queue latency: `sluice_queue_oldest_waiting_age_seconds`).
 * @returns null when the endpoint needs a token the console does not have (METRICS_TOKEN).
 */
export async function fetchMetricsText(): Promise<string | null> {
  const r = await client.GET('/metrics', { parseAs: 'text' }).catch(() => null);
  return r && r.response.ok ? (r.data as unknown as string) : null;
}
