/**
 * Routes whose response is long-lived by design, which a per-request
 * timeout (HTTP_REQUEST_TIMEOUT_MS) must skip:
 * - `GET /dashboard/events`: Server-Sent Events (src/dashboard/live/), kept
 *   alive by a heartbeat every 15 s, its socket's idle timeout off;
 * - `POST /queues/:name/claim`: the external workers' long poll (waitMs ≤ 30 s).
 */
export const LONG_LIVED_PATHS = /^\/(dashboard\/events|queues\/[^/?]+\/claim)(\?|$)/;

/** Whether a request URL (path and query) is a long-lived route of {@link LONG_LIVED_PATHS}. */
export function isLongLived(url: string): boolean {
  return LONG_LIVED_PATHS.test(url);
}
