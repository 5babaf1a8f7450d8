/**
 * Splits the packed options field `o` ("maxAttempts;timeoutMs;backoff", see
 * lua/includes/job.lua packOpts). Used for job hashes and `enqueued` events.
 * @returns null when the field is missing or has too few parts.
 */
export function splitOptions(o: string | undefined): { maxAttempts: number; timeoutMs: number; backoff: string } | null {
  if (!o) return null;
  const a = o.indexOf(';');
  const b = a < 0 ? -1 : o.indexOf(';', a + 1);
  if (b < 0) return null;
  return { maxAttempts: Number(o.slice(0, a)), timeoutMs: Number(o.slice(a + 1, b)), backoff: o.slice(b + 1) };
}
