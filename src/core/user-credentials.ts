import { randomBytes } from 'node:crypto';

/**
 * Dashboard users' credentials (issue "Security": users and sessions).
 * Framework-free rules shared by the API, the login and the CLI.
 *
 * Passwords follow NIST SP 800-63B §5.1.1.2: at least
 * {@link PASSWORD_MIN_CHARS} characters, no composition rules, every
 * printable character and space allowed. They are bounded at
 * {@link PASSWORD_MAX_BYTES} bytes (UTF-8) so an enormous password never
 * reaches the hash function (a cheap denial of service otherwise).
 */
export const PASSWORD_MIN_CHARS = 12;
export const PASSWORD_MAX_BYTES = 1024;

/** A username (or e-mail address): 1..128 of letters, digits and `. _ @ + -`, starting with a letter or digit. Unique case-insensitively. */
export const USERNAME_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._@+-]{0,127}$/;

/**
 * What is wrong with a new password, or null when it is acceptable.
 * Characters are counted as Unicode code points (an emoji is one). The
 * message never contains the password.
 */
export function passwordProblem(password: unknown): string | null {
  if (typeof password !== 'string') return 'must be a string';
  if (Buffer.byteLength(password, 'utf8') > PASSWORD_MAX_BYTES) return `must be at most ${PASSWORD_MAX_BYTES} bytes (UTF-8)`;
  if ([...password].length < PASSWORD_MIN_CHARS) return `must be at least ${PASSWORD_MIN_CHARS} characters`;
  return null;
}

/** The case-insensitive identity of a username (what uniqueness and the login limit count on). */
export function usernameKey(username: string): string {
  return username.toLowerCase();
}

/** A session cookie's value: 256 random bits, URL-safe base64 (43 characters). */
export const SESSION_TOKEN_PATTERN = /^[A-Za-z0-9_-]{43}$/;

/** A new session token (256 bits from the CSPRNG). Only its SHA-256 is stored. */
export function newSessionToken(): string {
  return randomBytes(32).toString('base64url');
}

/**
 * The bucket a client address is counted in for the login limit: an IPv4
 * address as itself (IPv4-mapped IPv6 too), an IPv6 address by its /64
 * (one host commonly holds a whole /64, so counting single addresses would
 * give it 2^64 tries). Lower case; `unknown` when there is none.
 */
export function addressBucket(ip: string | undefined): string {
  if (!ip) return 'unknown';
  const a = ip.toLowerCase().replace(/^\[|\]$/g, '').replace(/%.*$/, '');
  const mapped = /^::ffff:(\d{1,3}(?:\.\d{1,3}){3})$/.exec(a);
  if (mapped) return mapped[1];
  if (!a.includes(':')) return a;
  const [head, tail] = a.split('::');
  const left = head ? head.split(':') : [];
  const right = tail !== undefined && tail !== '' ? tail.split(':') : [];
  const groups = tail === undefined ? left : [...left, ...Array<string>(Math.max(0, 8 - left.length - right.length)).fill('0'), ...right];
  return groups.slice(0, 4).map((g) => (parseInt(g || '0', 16) || 0).toString(16)).join(':') + '::/64';
}
