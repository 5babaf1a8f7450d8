/**
 * `hidePayloads` (API.md v1.3 "Organizations and members"): what such a member
 * reads has every payload, result and log message replaced by {@link HIDDEN}.
 * One pure function over any answer of the API (and each live event), applied
 * in one place per channel (the HTTP interceptor, the live-events client), so
 * no route can forget it.
 *
 * Replaced, at any depth of an answer:
 * - `payload` and `result` of any object (a job, a flow's job, a claimed job);
 * - `message` of a log line (an object with `level` and `message`);
 * - `data` of a history event (an object with `event` and `data`), except a
 *   `progress` event's (progress is not a payload), when it is not null: an
 *   `enqueued`/`debounced` event's data is the payload, a `completed` one's the result.
 * Everything else (ids, states, errors, times, counts) is left as it is.
 */
export const HIDDEN = '[hidden]';

/** Deeper than any answer of the API: past it, values are left alone (a payload is replaced before it is entered). */
const MAX_DEPTH = 8;

/**
 * A copy of `value` with payloads, results and log messages replaced by {@link HIDDEN};
 * `value` is not changed. Primitives and objects that are not plain (Buffer, Date, streams)
 * come back as they are.
 */
export function hidePayloadsIn(value: unknown, depth = 0): unknown {
  if (value === null || typeof value !== 'object' || depth > MAX_DEPTH) return value;
  if (Array.isArray(value)) return value.map((v) => hidePayloadsIn(v, depth + 1));
  // Only plain JSON objects: a Buffer, a stream or a Date is not an answer's JSON and is left whole.
  const proto = Object.getPrototypeOf(value) as unknown;
  if (proto !== Object.prototype && proto !== null) return value;
  const src = value as Record<string, unknown>;
  const out: Record<string, unknown> = {};
  const logLine = typeof src.level === 'string' && 'message' in src;
  const event = typeof src.event === 'string' && 'data' in src ? src.event : null;
  for (const [k, v] of Object.entries(src)) {
    if (k === 'payload' || k === 'result') out[k] = v === undefined ? v : HIDDEN;
    else if (k === 'message' && logLine) out[k] = HIDDEN;
    else if (k === 'data' && event !== null && event !== 'progress' && v !== null) out[k] = HIDDEN;
    else out[k] = hidePayloadsIn(v, depth + 1);
  }
  return out;
}
