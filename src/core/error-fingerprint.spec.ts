import { errorFingerprint, FINGERPRINT_INPUT_CHARS, FINGERPRINT_PATTERN, normalizeError, normalizeText } from './error-fingerprint';

const same = (a: string, b: string) => expect(errorFingerprint(a)).toBe(errorFingerprint(b));
const differ = (a: string, b: string) => expect(errorFingerprint(a)).not.toBe(errorFingerprint(b));

describe('errorFingerprint', () => {
  it('is 16 hex characters, deterministic, null without a message', () => {
    const f = errorFingerprint('boom');
    expect(f).toMatch(FINGERPRINT_PATTERN);
    expect(errorFingerprint('boom')).toBe(f);
    expect(errorFingerprint(null)).toBeNull();
    expect(errorFingerprint(undefined)).toBeNull();
    expect(errorFingerprint('')).toMatch(FINGERPRINT_PATTERN);
  });

  it('groups messages that differ only in values', () => {
    same('connect ECONNREFUSED 127.0.0.1:5432', 'connect ECONNREFUSED 10.0.3.17:6379');
    same('Request failed with status code 503', 'Request failed with status code 502');
    same('timeout of 30000ms exceeded', 'timeout of 5000ms exceeded');
    same('order 4711 not found', 'order 12 not found');
    same('amount 12.50 exceeds limit 10.00', 'amount 99.99 exceeds limit 50.00');
    same('job 0190f6a4-7c1e-7b3a-9d2e-4f5a6b7c8d9e: lease expired', 'job 01911111-2222-7333-8444-555566667777: lease expired');
    same('Invalid recipient "alice@example.com"', 'Invalid recipient "bob.smith+tag@mail.example.org"');
    same('mailbox alice@example.com is full', 'mailbox bob@corp.example.co.uk is full');
    same('GET https://api.example.com/v1/orders/42?x=1 failed', 'GET http://10.1.2.3:8080/v2/items failed');
    same("Cannot read properties of undefined (reading 'total')", "Cannot read properties of undefined (reading 'items')");
    same('user `root` lacks permission', 'user `deploy` lacks permission');
    same('segfault at 0x7ffd5e8b3a10', 'segfault at 0x0');
    same('trace 4bf92f3577b34da6a3ce929d0e0e4736 failed', 'trace 00f067aa0ba902b7aaaaaaaaaaaaaaaa failed');
    same('lease expired: the worker stopped heartbeating (stalled) on attempt 3 of 3', 'lease expired: the worker stopped heartbeating (stalled) on attempt 1 of 1');
    same('boom   with\n  spaces', 'boom with spaces');
  });

  it('keeps different causes apart', () => {
    differ('connect ECONNREFUSED 127.0.0.1:5432', 'connect ETIMEDOUT 127.0.0.1:5432');
    differ('Request failed with status code 503', 'Request failed with header code 503');
    differ("Cannot read properties of undefined (reading 'total')", "Cannot read properties of null (reading 'total')");
    differ('mailbox full', 'mailbox not found');
    differ('boom', 'Boom');
    // Words made of hex letters are words, not values; an apostrophe is not a quote.
    differ('decade facade', 'accede facade');
    differ("can't parse, don't retry", "can't parse, do retry");
  });

  it('normalizes as documented', () => {
    expect(normalizeError('order 4711 for "Alice" at https://x.io/a?b=1 by a@b.co, id 0190f6a4-7c1e-7b3a-9d2e-4f5a6b7c8d9e, ptr 0xdead')).toBe(
      'order <n> for <str> at <url> by <email>, id <uuid>, ptr <hex>',
    );
    expect(normalizeError("don't stop 'me' now")).toBe("don't stop <str> now");
  });

  it(`only the first ${FINGERPRINT_INPUT_CHARS} characters count`, () => {
    const head = 'x'.repeat(FINGERPRINT_INPUT_CHARS);
    same(head + 'tail one', head + 'another tail');
    differ('y' + head, 'z' + head);
  });

  it('runs in linear time on long adversarial strings (no catastrophic backtracking)', () => {
    const n = 200_000;
    const inputs = [
      'a'.repeat(n) + '!', // word chars with no @ (e-mail), no :// (URL)
      'a@'.repeat(n / 2), // many @ with no domain
      'a@b'.repeat(n / 3) + '.', // labels without a TLD
      '"'.repeat(n), // quotes that never close within the bound
      '"' + 'x'.repeat(n), // an unclosed quote
      "'a".repeat(n / 2),
      'a1'.repeat(n / 2) + 'g', // a hex run ending in a word char
      '0x'.repeat(n / 2),
      '1.'.repeat(n / 2),
      'http://'.repeat(n / 7),
      'a-'.repeat(n / 2) + '@',
      '-'.repeat(n) + '@x',
      ' \t'.repeat(n / 2) + 'x',
    ];
    for (const s of inputs) {
      const t0 = process.hrtime.bigint();
      normalizeText(s);
      const ms = Number(process.hrtime.bigint() - t0) / 1e6;
      // Quadratic behaviour on 200 KB would take seconds to minutes.
      expect({ input: s.slice(0, 12), ms: ms < 500 }).toEqual({ input: s.slice(0, 12), ms: true });
    }
    // Capped: a megabyte costs about what 2 KiB cost (least of three rounds of
    // 100 calls each, so that a loaded machine does not decide). Uncapped,
    // even a linear pass over 1 MB costs hundreds of times more.
    const big = 'a@'.repeat(500_000);
    const small = 'a@'.repeat(1024);
    const cost = (s: string): number => {
      let least = Infinity;
      for (let round = 0; round < 3; round++) {
        const t0 = process.hrtime.bigint();
        for (let i = 0; i < 100; i++) errorFingerprint(s);
        least = Math.min(least, Number(process.hrtime.bigint() - t0) / 1e6);
      }
      return least;
    };
    const smallMs = cost(small);
    expect(cost(big)).toBeLessThan(smallMs * 10 + 50);
  });
});
