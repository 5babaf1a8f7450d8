import type { FastifyReply, FastifyRequest } from 'fastify';

/**
 * RFC 7240 `Prefer` on the enqueue routes (API.md v1.3 "Light answers on
 * enqueue"): whether the request asked for `return=minimal`.
 *
 * The header may come several times (Node joins them with `, `) and holds a
 * comma-separated list of preferences, each `token[=value]` with optional
 * `;`-parameters; tokens are case-insensitive and a value may be quoted. The
 * first `return` preference decides (RFC 7240 §2: a later duplicate is
 * ignored); anything unknown or malformed is ignored, never a 400 (§2: "a
 * server that does not understand a preference ignores it").
 * @returns true for `return=minimal`, false otherwise (absent, `representation`, junk).
 */
export function prefersMinimal(header: string | string[] | undefined): boolean {
  if (header === undefined) return false;
  const text = Array.isArray(header) ? header.join(',') : header;
  if (text.length > 4096) return false; // a bound on what is scanned; no real Prefer is this long
  for (const pref of text.split(',')) {
    const [head] = pref.split(';');
    const eq = head.indexOf('=');
    const token = (eq < 0 ? head : head.slice(0, eq)).trim().toLowerCase();
    if (token !== 'return') continue;
    const value = eq < 0 ? '' : head.slice(eq + 1).trim().replace(/^"(.*)"$/, '$1').toLowerCase();
    return value === 'minimal';
  }
  return false;
}

/** A job reduced as `Prefer: return=minimal` asks: its id and status only. */
export interface MinimalJob {
  id: string;
  status: string;
}

/**
 * When the request prefers `return=minimal`: sets `Preference-Applied:
 * return=minimal` on the reply and answers true (the route then answers
 * {@link MinimalJob}s); else false and nothing is set.
 */
export function applyMinimal(req: FastifyRequest, reply: FastifyReply): boolean {
  if (!prefersMinimal(req.headers.prefer)) return false;
  void reply.header('preference-applied', 'return=minimal');
  return true;
}
