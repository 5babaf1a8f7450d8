import { isIP } from 'node:net';

/**
 * Outbound address policy of the built-in `http.request` handler (API.md
 * "Built-in http.request handler"): which IP addresses a job may make the
 * server connect to. Framework-free; only `node:net`.
 *
 * IPv4 refuses every special-purpose block of the IANA registry (RFC 6890 and
 * successors) that is not globally reachable. IPv6 allows only global unicast
 * (2000::/3) minus its special blocks, and judges the forms that carry an IPv4
 * address (IPv4-mapped ::ffff:0:0/96, IPv4-compatible ::/96, NAT64
 * 64:ff9b::/96, 6to4 2002::/16) by that IPv4 address, since a packet to them
 * ends up there.
 */

/** Verdict on one address; `rule` names the range that refused it (never the address itself). */
export type AddressVerdict = { allowed: true } | { allowed: false; rule: string };

const ALLOWED: AddressVerdict = { allowed: true };
const refuse = (rule: string): AddressVerdict => ({ allowed: false, rule });

/** A CIDR block over a byte array of 4 (IPv4) or 16 (IPv6) bytes. */
interface Block {
  bytes: number[];
  bits: number;
  rule: string;
}

const V4_BLOCKS: Block[] = [
  { bytes: [0, 0, 0, 0], bits: 8, rule: 'unspecified (0.0.0.0/8)' },
  { bytes: [10, 0, 0, 0], bits: 8, rule: 'private (10.0.0.0/8)' },
  { bytes: [100, 64, 0, 0], bits: 10, rule: 'CGNAT (100.64.0.0/10)' },
  { bytes: [127, 0, 0, 0], bits: 8, rule: 'loopback (127.0.0.0/8)' },
  { bytes: [169, 254, 0, 0], bits: 16, rule: 'link-local (169.254.0.0/16)' },
  { bytes: [172, 16, 0, 0], bits: 12, rule: 'private (172.16.0.0/12)' },
  { bytes: [192, 0, 0, 0], bits: 24, rule: 'IETF protocol assignments (192.0.0.0/24)' },
  { bytes: [192, 0, 2, 0], bits: 24, rule: 'documentation (192.0.2.0/24)' },
  { bytes: [192, 88, 99, 0], bits: 24, rule: '6to4 relay anycast (192.88.99.0/24)' },
  { bytes: [192, 168, 0, 0], bits: 16, rule: 'private (192.168.0.0/16)' },
  { bytes: [198, 18, 0, 0], bits: 15, rule: 'benchmarking (198.18.0.0/15)' },
  { bytes: [198, 51, 100, 0], bits: 24, rule: 'documentation (198.51.100.0/24)' },
  { bytes: [203, 0, 113, 0], bits: 24, rule: 'documentation (203.0.113.0/24)' },
  { bytes: [224, 0, 0, 0], bits: 4, rule: 'multicast (224.0.0.0/4)' },
  { bytes: [255, 255, 255, 255], bits: 32, rule: 'broadcast (255.255.255.255)' },
  { bytes: [240, 0, 0, 0], bits: 4, rule: 'reserved (240.0.0.0/4)' },
];

const v6 = (prefix: number[], bits: number, rule: string): Block => ({ bytes: [...prefix, ...new Array(16 - prefix.length).fill(0)], bits, rule });

/** IPv6 blocks refused outright (checked before the IPv4-carrying forms and the 2000::/3 rule). */
const V6_BLOCKS: Block[] = [
  v6([], 128, 'unspecified (::)'),
  v6([0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1], 128, 'loopback (::1)'),
  v6([0x00, 0x64, 0xff, 0x9b, 0x00, 0x01], 48, 'NAT64 local-use (64:ff9b:1::/48)'),
  v6([0x01, 0x00, 0, 0, 0, 0, 0, 0], 64, 'discard-only (100::/64)'),
  v6([0x20, 0x01, 0x0d, 0xb8], 32, 'documentation (2001:db8::/32)'),
  v6([0x20, 0x01, 0x00, 0x00], 32, 'Teredo (2001::/32)'),
  v6([0x20, 0x01, 0x00, 0x02, 0x00, 0x00], 48, 'benchmarking (2001:2::/48)'),
  v6([0x20, 0x01, 0x00, 0x10], 28, 'ORCHID (2001:10::/28)'),
  v6([0x20, 0x01, 0x00, 0x20], 28, 'ORCHIDv2 (2001:20::/28)'),
  v6([0x20, 0x01, 0x00], 23, 'IETF protocol assignments (2001::/23)'),
  v6([0x3f, 0xff], 20, 'documentation (3fff::/20)'),
  v6([0xfc], 7, 'unique local (fc00::/7)'),
  v6([0xfe, 0x80], 10, 'link-local (fe80::/10)'),
  v6([0xfe, 0xc0], 10, 'site-local (fec0::/10)'),
  v6([0xff], 8, 'multicast (ff00::/8)'),
];

function inBlock(bytes: Uint8Array, b: Block): boolean {
  let bits = b.bits;
  for (let i = 0; bits > 0; i++, bits -= 8) {
    const mask = bits >= 8 ? 0xff : (0xff << (8 - bits)) & 0xff;
    if ((bytes[i] & mask) !== (b.bytes[i] & mask)) return false;
  }
  return true;
}

/**
 * Parses a strict dotted-quad IPv4 address (four decimal parts 0..255, no
 * leading zeros: the form DNS answers and WHATWG URL serialization produce).
 * Returns 4 bytes, or null for anything else (`127.1`, `0x7f.0.0.1`, `2130706433`
 * are not accepted here: a URL host is normalized by `new URL` first).
 */
export function parseIPv4(text: string): Uint8Array | null {
  const parts = text.split('.');
  if (parts.length !== 4) return null;
  const out = new Uint8Array(4);
  for (let i = 0; i < 4; i++) {
    const p = parts[i];
    if (!/^(0|[1-9]\d{0,2})$/.test(p)) return null;
    const n = Number(p);
    if (n > 255) return null;
    out[i] = n;
  }
  return out;
}

/**
 * Parses an IPv6 address (with `::` compression and an optional dotted IPv4
 * tail, no brackets) to 16 bytes. A zone index (`fe80::1%eth0`) is stripped
 * and reported, since only link-local and multicast addresses take one.
 * Returns null when the text is not IPv6.
 */
export function parseIPv6(text: string): { bytes: Uint8Array; zone: string | null } | null {
  let zone: string | null = null;
  const pct = text.indexOf('%');
  if (pct >= 0) {
    zone = text.slice(pct + 1);
    text = text.slice(0, pct);
    if (!zone) return null;
  }
  if (isIP(text) !== 6) return null;
  const groups: number[] = [];
  const expand = (s: string): number[] | null => {
    if (s === '') return [];
    const out: number[] = [];
    const parts = s.split(':');
    for (let i = 0; i < parts.length; i++) {
      const p = parts[i];
      if (i === parts.length - 1 && p.includes('.')) {
        const v4 = parseIPv4(p);
        if (!v4) return null;
        out.push((v4[0] << 8) | v4[1], (v4[2] << 8) | v4[3]);
      } else {
        if (!/^[0-9a-fA-F]{1,4}$/.test(p)) return null;
        out.push(parseInt(p, 16));
      }
    }
    return out;
  };
  const dbl = text.indexOf('::');
  if (dbl >= 0) {
    const head = expand(text.slice(0, dbl));
    const tail = expand(text.slice(dbl + 2));
    if (!head || !tail || head.length + tail.length > 7) return null;
    groups.push(...head, ...new Array(8 - head.length - tail.length).fill(0), ...tail);
  } else {
    const all = expand(text);
    if (!all || all.length !== 8) return null;
    groups.push(...all);
  }
  const bytes = new Uint8Array(16);
  groups.forEach((g, i) => {
    bytes[2 * i] = g >> 8;
    bytes[2 * i + 1] = g & 0xff;
  });
  return { bytes, zone };
}

function checkV4Bytes(b: Uint8Array): AddressVerdict {
  for (const block of V4_BLOCKS) if (inBlock(b, block)) return refuse(block.rule);
  return ALLOWED;
}

const zeroes = (b: Uint8Array, from: number, to: number) => b.subarray(from, to).every((x) => x === 0);

function checkV6Bytes(b: Uint8Array): AddressVerdict {
  for (const block of V6_BLOCKS) if (inBlock(b, block)) return refuse(block.rule);
  // Forms that carry an IPv4 address are judged by it: connecting to them reaches it.
  const carried = (form: string, v4: Uint8Array): AddressVerdict => {
    const inner = checkV4Bytes(v4);
    return inner.allowed ? inner : refuse(`${inner.rule} as ${form}`);
  };
  if (zeroes(b, 0, 10) && b[10] === 0xff && b[11] === 0xff) return carried('IPv4-mapped IPv6', b.subarray(12));
  if (zeroes(b, 0, 12)) {
    // Deprecated (RFC 4291 §2.5.5.1); never routable, whatever it carries.
    const inner = checkV4Bytes(b.subarray(12));
    return refuse(inner.allowed ? 'IPv4-compatible IPv6 (::/96)' : `${inner.rule} as IPv4-compatible IPv6`);
  }
  if (b[0] === 0x00 && b[1] === 0x64 && b[2] === 0xff && b[3] === 0x9b && zeroes(b, 4, 12)) return carried('NAT64 (64:ff9b::/96)', b.subarray(12));
  if (b[0] === 0x20 && b[1] === 0x02) return carried('6to4 (2002::/16)', b.subarray(2, 6));
  if ((b[0] & 0xe0) !== 0x20) return refuse('not global unicast (outside 2000::/3)');
  return ALLOWED;
}

/**
 * Judges one IP address as a connect target. `ip` is an IPv4 dotted quad or
 * an IPv6 address (brackets and a zone index accepted); anything that is not
 * an IP address is refused with rule `not an IP address`.
 */
export function checkAddress(ip: string): AddressVerdict {
  let text = ip;
  if (text.startsWith('[') && text.endsWith(']')) text = text.slice(1, -1);
  const v4 = parseIPv4(text);
  if (v4) return checkV4Bytes(v4);
  const parsed = parseIPv6(text);
  if (!parsed) return refuse('not an IP address');
  const verdict = checkV6Bytes(parsed.bytes);
  if (verdict.allowed && parsed.zone !== null) return refuse('scoped address (zone index)');
  return verdict;
}

/**
 * A URL host as `HTTP_HANDLER_ALLOW_HOSTS` compares it: lower case, without
 * IPv6 brackets or one trailing dot. `new URL` has already applied IDNA
 * mapping and IPv4 number normalization to a URL's hostname.
 */
export function normalizeHost(host: string): string {
  let h = host.toLowerCase();
  if (h.startsWith('[') && h.endsWith(']')) h = h.slice(1, -1);
  if (h.endsWith('.')) h = h.slice(0, -1);
  return h;
}

/**
 * Validates and normalizes one `HTTP_HANDLER_ALLOW_HOSTS` entry: a DNS host
 * name (letters, digits, `-`, dots; labels ≤ 63, total ≤ 253) or an IP
 * literal, compared as `new URL` would serialize it. Returns null when invalid.
 */
export function normalizeAllowHost(entry: string): string | null {
  const raw = entry.trim();
  if (!raw || raw.length > 255 || /[\s/?#@%\\]/.test(raw)) return null;
  let host: string;
  try {
    host = new URL(`http://${raw.includes(':') && !raw.startsWith('[') ? `[${raw}]` : raw}/`).hostname;
  } catch {
    return null;
  }
  const h = normalizeHost(host);
  if (isIP(h)) return h;
  if (h.length > 253 || !h.split('.').every((l) => /^[a-z0-9_]([a-z0-9_-]{0,61}[a-z0-9_])?$/.test(l))) return null;
  return h;
}
