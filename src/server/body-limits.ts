import { BODY_ENVELOPE_BYTES, type SluiceConfig } from '../config/config';

/** The routes whose body holds many jobs (1..1,000): read up to MAX_REQUEST_BYTES. */
const MANY_JOB_ROUTES = /^\/(jobs\/batch|flows)(\?|$)/;

/**
 * Largest body a route reads, bytes (docs/guarantees.md "Request bodies",
 * checked against this by test/docs/body-limits.test.ts):
 * - `POST /jobs/batch` and `POST /flows`: MAX_REQUEST_BYTES (default 16 MiB);
 * - every other route: one maximal payload or result plus its envelope,
 *   MAX_PAYLOAD_BYTES + {@link BODY_ENVELOPE_BYTES} (default 589,824).
 * A larger body is refused 413 `payload_too_large` without being read (its
 * Content-Length says so; a chunked one is cut at the limit): src/server/json-body.ts.
 */
export function bodyLimitBytes(config: Pick<SluiceConfig, 'maxPayloadBytes' | 'maxRequestBytes'>, url = ''): number {
  if (MANY_JOB_ROUTES.test(url)) return config.maxRequestBytes;
  return config.maxPayloadBytes + BODY_ENVELOPE_BYTES;
}

/** The largest body any route reads (Fastify's own `bodyLimit`, never reached: json-body.ts reads bodies). */
export function largestBodyBytes(config: Pick<SluiceConfig, 'maxPayloadBytes' | 'maxRequestBytes'>): number {
  return Math.max(config.maxRequestBytes, config.maxPayloadBytes + BODY_ENVELOPE_BYTES);
}
