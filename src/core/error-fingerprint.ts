import { createHash } from 'node:crypto';

/**
 * Dead-letter groups (API.md v1.1 "Dead-letter groups"): a failed job's error
 * message, normalized — URLs, e-mail addresses, UUIDs, quoted strings, hex
 * and numbers replaced by placeholders, whitespace collapsed — then hashed.
 * Jobs whose messages differ only in such values (an id, an amount, a host
 * port, a quoted name) share a fingerprint: they failed for one cause.
 *
 * Computed once when a job dies (the mirror writer, src/mirror/projection.ts)
 * and again, by this same function, when a live failed job is read from
 * Redis (src/http/api-job.ts): both must agree, so this is the one place
 * the rules live.
 *
 * Cost and safety: the message is cut to {@link FINGERPRINT_INPUT_CHARS}
 * before any pattern runs, and every pattern is linear: no nested or
 * adjacent overlapping quantifiers, each quantified class is disjoint from
 * what must follow it, and a quoted string stops at its closing quote or
 * after {@link QUOTED_MAX} characters, so even uncapped
 * ({@link normalizeText}) a long adversarial string costs time linear in its
 * length (error-fingerprint.spec.ts runs 200 KB of each kind).
 */

/** Characters of a message that are normalized (the rest is ignored): ms-cheap whatever a handler throws. */
export const FINGERPRINT_INPUT_CHARS = 1024;
/** Longest quoted string replaced as one value; a longer "quote" is left as text. */
const QUOTED_MAX = 200;

/** Hex characters of the fingerprint (64 bits of SHA-256: collisions between distinct causes are negligible). */
const FINGERPRINT_HEX = 16;

/*
 * Order matters: a URL may hold an e-mail address, numbers, a UUID; a quoted
 * string may hold anything. Each rule is one pass of String.replace, skipped
 * when the text lacks the rule's third element (a substring every match has).
 */
const RULES: [RegExp, string, string?][] = [
  // scheme://… up to whitespace, a quote or a bracket.
  [/\b[a-z][a-z0-9+.-]{0,15}:\/\/[^\s"'`<>()[\]{}]+/gi, '<url>', '://'],
  // local@domain.tld: the domain is labels joined by single dots (linear: a label cannot contain the dot).
  [/[\w.+-]{1,64}@[a-z0-9-]{1,63}(?:\.[a-z0-9-]{1,63})+/gi, '<email>', '@'],
  [/\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b/gi, '<uuid>', '-'],
  // Quotes not inside a word: "x", 'x', `x` — but not the apostrophes of "can't … don't".
  [new RegExp(`(?<![\\w])(?:"[^"\\n]{0,${QUOTED_MAX}}"|'[^'\\n]{0,${QUOTED_MAX}}'(?![\\w])|\`[^\`\\n]{0,${QUOTED_MAX}}\`)`, 'g'), '<str>'],
  [/\b0x[0-9a-f]+\b/gi, '<hex>'],
  // Bare hex of 8+ characters with at least one digit (hashes, trace ids), not an English word.
  [/\b(?=[a-f]{0,63}\d)[0-9a-f]{8,}\b/gi, '<hex>'],
  [/\d+(?:\.\d+)?/g, '<n>'],
  [/\s+/g, ' '],
];

/**
 * The normalized form of an error message (what is hashed): see the module
 * comment. Pure and deterministic.
 * @param message any string; only its first {@link FINGERPRINT_INPUT_CHARS} characters count.
 */
export function normalizeError(message: string): string {
  return normalizeText(message.length > FINGERPRINT_INPUT_CHARS ? message.slice(0, FINGERPRINT_INPUT_CHARS) : message);
}

/** The rules of {@link normalizeError} on the whole of `s`, uncut (exported for the linear-time tests). */
export function normalizeText(s: string): string {
  for (const [re, to, needle] of RULES) if (needle === undefined || s.includes(needle)) s = s.replace(re, to);
  return s.trim();
}

/**
 * The fingerprint of a failed job's error: 16 lowercase hex characters
 * (SHA-256 of {@link normalizeError}), or null when there is no error
 * message (null/undefined). An empty message has a fingerprint of its own.
 */
export function errorFingerprint(message: string | null | undefined): string | null {
  if (message === null || message === undefined) return null;
  return createHash('sha256').update(normalizeError(message), 'utf8').digest('hex').slice(0, FINGERPRINT_HEX);
}

/** A fingerprint as {@link errorFingerprint} makes it (for validating a filter). */
export const FINGERPRINT_PATTERN = /^[0-9a-f]{16}$/;

/**
 * The job object's `fingerprint` (API.md v1.1): for a `failed` job the one
 * stored when it entered the DLQ (`stored`), else computed from its
 * `lastError` (a live job read from Redis; a missing message counts as
 * empty, as the mirror writer counts it); null for any other status.
 */
export function jobFingerprint(job: { status: string; lastError: string | null; fingerprint?: string | null }): string | null {
  if (job.status !== 'failed') return null;
  return job.fingerprint ?? errorFingerprint(job.lastError ?? '');
}
