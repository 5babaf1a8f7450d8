import { escapedText } from '../postgres/pg-errors';

/**
 * One operator-audit record (docs/security.md, "Operator log"): who did what to which
 * target, when, from where, and how it was answered. Never a body, a payload
 * or a secret: the actor is the principal's label (`key:<id>`, `user:<id>`,
 * `anonymous`) and the target one named identifier.
 */
export interface OplogRecord {
  /** UUIDv7 made when the answer was sent: the primary key, the sort order and the cursor. */
  id: string;
  /** When the request was answered, epoch ms (the API host's clock). */
  at: number;
  /** The project the request acted in (`default` for a request whose credentials were not accepted). */
  project: string;
  /** `key:<id>`, `user:<id>`, `anonymous` (AUTH=off), or `none` when no credentials were accepted (401, cross-site 403). */
  actor: string;
  /** The principal's kind (`key`, `user`, `anonymous`) or `none`. */
  actorKind: string;
  /** What was asked, e.g. `queue.pause` (the route's `@Audited` action). */
  action: string;
  /** The queue, job, schedule or key acted on; null when the call names none (e.g. purge of every queue). */
  target: string | null;
  method: string;
  /** The route pattern, e.g. `/queues/:name/pause` (never the raw URL or its query). */
  path: string;
  /** HTTP status of the answer: refusals (401, 403, 404, 409, 429…) are recorded too. */
  status: number;
  /** The client address (the TCP peer: Fastify's `req.ip`, no proxy header trusted). */
  address: string | null;
  /** The request's X-Request-Id (links the record to the request log line). */
  requestId: string | null;
}

/** Most records the Redis buffer holds while PostgreSQL is away (~300 bytes each: ≤ ~30 MB); past it new records are dropped and counted. */
export const OPLOG_BUFFER_MAX = 100_000;

/** Longest target kept, characters (a longer value is no identifier: no target is recorded). */
const TARGET_MAX = 200;

/**
 * A target value as recorded: a string of 1..200 characters, else null. NUL
 * and lone surrogates (a hostile request's path parameter, refused with 400
 * but recorded all the same) are written as their escape text (`\u0000`):
 * PostgreSQL text cannot hold them, and the refusal must stay in the log.
 */
export function targetValue(v: unknown): string | null {
  if (typeof v === 'number' && Number.isFinite(v)) return String(v);
  return typeof v === 'string' && v.length > 0 && v.length <= TARGET_MAX ? escapedText(v) : null;
}

/**
 * The record with every text made storable ({@link escapedText}): what the
 * flusher writes, whatever version of the recorder buffered it.
 */
export function storableRecord(r: OplogRecord): OplogRecord {
  const t = (s: string) => escapedText(s);
  const n = (s: string | null) => (s === null ? null : escapedText(s));
  return { ...r, project: t(r.project), actor: t(r.actor), actorKind: t(r.actorKind), action: t(r.action), target: n(r.target), method: t(r.method), path: t(r.path), address: n(r.address), requestId: n(r.requestId) };
}

/**
 * Parses a buffered record (JSON text) back, checking every field's type.
 * @returns the record, or null when the text is not one (skipped by the flusher).
 */
export function parseRecord(text: string | null | undefined): OplogRecord | null {
  if (!text) return null;
  let r: Record<string, unknown>;
  try {
    r = JSON.parse(text) as Record<string, unknown>;
  } catch {
    return null;
  }
  if (!r || typeof r !== 'object') return null;
  const str = (k: string) => typeof r[k] === 'string';
  const strOrNull = (k: string) => r[k] === null || typeof r[k] === 'string';
  if (!(typeof r.id === 'string' && /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/.test(r.id))) return null;
  if (!(typeof r.at === 'number' && Number.isFinite(r.at) && typeof r.status === 'number' && Number.isInteger(r.status))) return null;
  if (!['project', 'actor', 'actorKind', 'action', 'method', 'path'].every(str)) return null;
  if (!['target', 'address', 'requestId'].every(strOrNull)) return null;
  return r as unknown as OplogRecord;
}
