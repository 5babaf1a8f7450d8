import { addressBucket, newSessionToken, passwordProblem, SESSION_TOKEN_PATTERN, usernameKey } from './user-credentials';

describe('passwordProblem (NIST SP 800-63B: length only, bounded)', () => {
  it('accepts 12 characters and more, of any kind', () => {
    for (const ok of ['aaaaaaaaaaaa', 'correct horse battery staple', '           x', 'ééééééééééé1', '😀'.repeat(12), 'x'.repeat(1024)]) expect(passwordProblem(ok)).toBeNull();
  });
  it('refuses fewer than 12 characters, counting code points (not UTF-16 units)', () => {
    expect(passwordProblem('a'.repeat(11))).toMatch(/at least 12/);
    expect(passwordProblem('😀'.repeat(11))).toMatch(/at least 12/); // 22 UTF-16 units
    expect(passwordProblem('')).toMatch(/at least 12/);
  });
  it('refuses more than 1024 bytes of UTF-8, whatever the character count', () => {
    expect(passwordProblem('x'.repeat(1025))).toMatch(/at most 1024 bytes/);
    expect(passwordProblem('é'.repeat(513))).toMatch(/at most 1024 bytes/); // 513 characters, 1026 bytes
    expect(passwordProblem(42)).toBe('must be a string');
  });
  it('never echoes the password', () => {
    const pw = 'short-secret';
    expect(passwordProblem(pw.slice(0, 5)) ?? '').not.toContain(pw.slice(0, 5));
  });
});

describe('addressBucket', () => {
  it('counts IPv4 (also IPv4-mapped) by address, IPv6 by /64', () => {
    expect(addressBucket('203.0.113.7')).toBe('203.0.113.7');
    expect(addressBucket('::ffff:203.0.113.7')).toBe('203.0.113.7');
    expect(addressBucket('2001:db8:1:2::1')).toBe('2001:db8:1:2::/64');
    expect(addressBucket('2001:DB8:1:2:ffff:1:2:3')).toBe('2001:db8:1:2::/64');
    expect(addressBucket('2001:0db8:0001:0002:0000::9')).toBe('2001:db8:1:2::/64');
    expect(addressBucket('2001:db8::1')).toBe('2001:db8:0:0::/64');
    expect(addressBucket('::1')).toBe('0:0:0:0::/64');
    expect(addressBucket('fe80::1%eth0')).toBe('fe80:0:0:0::/64');
    expect(addressBucket(undefined)).toBe('unknown');
  });
});

describe('session tokens and usernames', () => {
  it('a token is 256 random bits, URL-safe base64', () => {
    const a = newSessionToken();
    expect(a).toMatch(SESSION_TOKEN_PATTERN);
    expect(Buffer.from(a, 'base64url')).toHaveLength(32);
    expect(newSessionToken()).not.toBe(a);
  });
  it('usernames compare without case', () => {
    expect(usernameKey('Ana@Example.COM')).toBe(usernameKey('ana@example.com'));
  });
});
