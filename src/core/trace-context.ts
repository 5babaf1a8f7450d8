/**
 * W3C Trace Context (https://www.w3.org/TR/trace-context/) header parsing,
 * strict and dependency-free: a job carries the `traceparent` (and
 * `tracestate`) it was enqueued with, so both are validated before they are
 * stored. Per the recommendation, a malformed header is ignored (the request
 * goes on without it), never an error.
 */

/** A validated trace context: `traceparent` normalized (version 00), `tracestate` null when absent or invalid. */
export interface TraceParent {
  /** `00-<32 hex trace id>-<16 hex parent id>-<2 hex flags>`, lowercase. */
  traceparent: string;
  traceId: string;
  /** The parent span's id (the caller's span). */
  spanId: string;
  /** Trace flags, 0..255 (bit 0 = sampled). */
  flags: number;
  /** The validated list (members joined by `,`), or null. */
  tracestate: string | null;
}

/** Longest `tracestate` kept, characters (W3C: at least 512 must be propagated; we keep at most that). */
export const MAX_TRACESTATE_CHARS = 512;
/** W3C: at most 32 list-members. */
const MAX_TRACESTATE_MEMBERS = 32;

const TRACEPARENT = /^00-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}$/;
const ZERO_TRACE = '00000000000000000000000000000000';
const ZERO_SPAN = '0000000000000000';
// key = simple-key / multi-tenant-key (W3C tracestate §3.3.1.3.1).
const SIMPLE_KEY = /^[a-z][a-z0-9_\-*/]{0,255}$/;
const TENANT_KEY = /^[a-z0-9][a-z0-9_\-*/]{0,240}@[a-z][a-z0-9_\-*/]{0,13}$/;
// value = 0*255(chr) nblk-chr; chr = %x20 / nblk-chr; nblk-chr = %x21-2B / %x2D-3C / %x3E-7E.
const VALUE = /^[\x20-\x2b\x2d-\x3c\x3e-\x7e]{0,255}[\x21-\x2b\x2d-\x3c\x3e-\x7e]$/;

/**
 * Parses a `traceparent` header of version 00: exactly
 * `00-<32 lowercase hex>-<16 lowercase hex>-<2 hex>`, trace id and parent id
 * not all zeros. Other versions (and `ff`) are refused: this server only
 * writes version 00, so it only stores what it can vouch for.
 * @param header the header value; an array (the header sent twice) is refused, as W3C asks.
 * @param tracestate the `tracestate` header(s); several are joined with `,` (HTTP list rules).
 * @returns the context, or null when `traceparent` is missing or malformed.
 */
export function parseTraceParent(
  header: string | string[] | undefined,
  tracestate?: string | string[],
): TraceParent | null {
  if (typeof header !== 'string' || header.length !== 55 || !TRACEPARENT.test(header)) return null;
  const traceId = header.slice(3, 35);
  const spanId = header.slice(36, 52);
  if (traceId === ZERO_TRACE || spanId === ZERO_SPAN) return null;
  return {
    traceparent: header,
    traceId,
    spanId,
    flags: parseInt(header.slice(53), 16),
    tracestate: tracestate === undefined ? null : parseTraceState(Array.isArray(tracestate) ? tracestate.join(',') : tracestate),
  };
}

/**
 * Validates a `tracestate` list: at most {@link MAX_TRACESTATE_CHARS}
 * characters and 32 members, each `key=value` by the W3C grammar, no key
 * twice; empty members and optional whitespace around them are dropped.
 * @returns the normalized list (members joined by `,`), or null when absent, empty or invalid (the whole header is then dropped).
 */
export function parseTraceState(header: string | undefined): string | null {
  if (typeof header !== 'string' || header.length === 0 || header.length > MAX_TRACESTATE_CHARS)
    return null;
  const members: string[] = [];
  const keys = new Set<string>();
  for (const raw of header.split(',')) {
    const member = trimOws(raw);
    if (!member) continue;
    const eq = member.indexOf('=');
    if (eq <= 0) return null;
    const key = member.slice(0, eq);
    const value = member.slice(eq + 1);
    if (!(SIMPLE_KEY.test(key) || TENANT_KEY.test(key)) || !VALUE.test(value) || keys.has(key))
      return null;
    keys.add(key);
    members.push(member);
  }
  if (!members.length || members.length > MAX_TRACESTATE_MEMBERS) return null;
  return members.join(',');
}

/** `s` without the optional whitespace (spaces and tabs only, RFC 9110 OWS) around it. */
function trimOws(s: string): string {
  let a = 0;
  let b = s.length;
  while (a < b && (s.charCodeAt(a) === 0x20 || s.charCodeAt(a) === 0x09)) a++;
  while (b > a && (s.charCodeAt(b - 1) === 0x20 || s.charCodeAt(b - 1) === 0x09)) b--;
  return a === 0 && b === s.length ? s : s.slice(a, b);
}

/**
 * Formats a version-00 `traceparent`.
 * @param traceId 32 lowercase hex; @param spanId 16 lowercase hex; @param flags 0..255.
 */
export function formatTraceParent(traceId: string, spanId: string, flags: number): string {
  return `00-${traceId}-${spanId}-${(flags & 0xff).toString(16).padStart(2, '0')}`;
}

/** The trace context a job carries (job hash fields `tp`, `ts`): what its workers continue. */
export interface JobTrace {
  /** Version-00 `traceparent`, validated. */
  traceparent: string;
  /** Validated `tracestate`, or null. */
  tracestate: string | null;
}
