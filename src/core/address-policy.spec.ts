import { checkAddress, normalizeAllowHost, normalizeHost, parseIPv4, parseIPv6 } from './address-policy';

const rule = (ip: string) => {
  const v = checkAddress(ip);
  return v.allowed ? 'allowed' : v.rule;
};

describe('address policy: IPv4', () => {
  it.each([
    ['0.0.0.0', 'unspecified'],
    ['0.255.255.255', 'unspecified'],
    ['10.0.0.0', 'private (10.'],
    ['10.255.255.255', 'private (10.'],
    ['100.64.0.0', 'CGNAT'],
    ['100.127.255.255', 'CGNAT'],
    ['127.0.0.1', 'loopback'],
    ['127.255.255.254', 'loopback'],
    ['169.254.169.254', 'link-local (169.254.0.0/16)'],
    ['169.254.0.1', 'link-local'],
    ['172.16.0.1', 'private (172.16'],
    ['172.31.255.255', 'private (172.16'],
    ['192.0.0.1', 'IETF protocol assignments'],
    ['192.0.0.170', 'IETF protocol assignments'],
    ['192.0.2.10', 'documentation'],
    ['192.88.99.1', '6to4 relay'],
    ['192.168.1.1', 'private (192.168'],
    ['198.18.0.1', 'benchmarking'],
    ['198.19.255.255', 'benchmarking'],
    ['198.51.100.7', 'documentation'],
    ['203.0.113.9', 'documentation'],
    ['224.0.0.1', 'multicast'],
    ['239.255.255.250', 'multicast'],
    ['240.0.0.1', 'reserved'],
    ['254.1.2.3', 'reserved'],
    ['255.255.255.255', 'broadcast'],
  ])('refuses %s (%s)', (ip, expected) => {
    expect(rule(ip)).toContain(expected);
  });

  it.each([
    '1.1.1.1', '8.8.8.8', '9.255.255.255', '11.0.0.0', '100.63.255.255', '100.128.0.0', '126.255.255.255', '128.0.0.0',
    '169.253.255.255', '169.255.0.0', '172.15.255.255', '172.32.0.0', '192.0.1.0', '192.0.3.0', '192.167.255.255',
    '192.169.0.0', '198.17.255.255', '198.20.0.0', '223.255.255.255', '93.184.216.34',
  ])('allows public %s', (ip) => {
    expect(rule(ip)).toBe('allowed');
  });

  it('parses only strict dotted quads (the shapes new URL and DNS produce)', () => {
    expect(Array.from(parseIPv4('192.168.0.1')!)).toEqual([192, 168, 0, 1]);
    for (const bad of ['127.1', '0x7f.0.0.1', '0177.0.0.1', '2130706433', '1.2.3.256', '1.2.3.4.', '1.2.3', ' 1.2.3.4', '1.2.3.-1', '01.2.3.4', '']) {
      expect(parseIPv4(bad)).toBeNull();
    }
  });
});

describe('address policy: IPv6', () => {
  it.each([
    ['::', 'unspecified (::)'],
    ['::1', 'loopback (::1)'],
    ['0:0:0:0:0:0:0:1', 'loopback (::1)'],
    ['[::1]', 'loopback (::1)'],
    ['::ffff:127.0.0.1', 'loopback (127.0.0.0/8) as IPv4-mapped IPv6'],
    ['::ffff:7f00:1', 'loopback (127.0.0.0/8) as IPv4-mapped IPv6'],
    ['::FFFF:7F00:0001', 'loopback (127.0.0.0/8) as IPv4-mapped IPv6'],
    ['0:0:0:0:0:ffff:a9fe:a9fe', 'link-local (169.254.0.0/16) as IPv4-mapped IPv6'],
    ['::ffff:10.1.2.3', 'private (10.0.0.0/8) as IPv4-mapped'],
    ['::ffff:0.0.0.0', 'unspecified (0.0.0.0/8) as IPv4-mapped'],
    ['::127.0.0.1', 'loopback (127.0.0.0/8) as IPv4-compatible'],
    ['::7f00:1', 'loopback (127.0.0.0/8) as IPv4-compatible'],
    ['::8.8.8.8', 'IPv4-compatible IPv6 (::/96)'],
    ['64:ff9b::7f00:1', 'loopback (127.0.0.0/8) as NAT64'],
    ['64:ff9b::169.254.169.254', 'link-local (169.254.0.0/16) as NAT64'],
    ['64:ff9b:1::1', 'NAT64 local-use'],
    ['100::1', 'discard-only'],
    ['2001:db8::1', 'documentation (2001:db8::/32)'],
    ['2001::1', 'Teredo'],
    ['2001:2::1', 'benchmarking'],
    ['2001:10::1', 'ORCHID'],
    ['2001:1::1', 'IETF protocol assignments'],
    ['2002:7f00:1::', 'loopback (127.0.0.0/8) as 6to4'],
    ['2002:c0a8:101::1', 'private (192.168.0.0/16) as 6to4'],
    ['3fff::1', 'documentation (3fff::/20)'],
    ['fc00::1', 'unique local'],
    ['fd12:3456:789a::1', 'unique local'],
    ['fe80::1', 'link-local (fe80::/10)'],
    ['febf::1', 'link-local (fe80::/10)'],
    ['fe80::1%eth0', 'link-local (fe80::/10)'],
    ['fec0::1', 'site-local'],
    ['ff02::1', 'multicast'],
    ['ff05::1:3', 'multicast'],
    ['4000::1', 'not global unicast'],
    ['1::', 'not global unicast'],
    ['::2', 'unspecified (0.0.0.0/8) as IPv4-compatible IPv6'],
  ])('refuses %s (%s)', (ip, expected) => {
    expect(rule(ip)).toContain(expected);
  });

  it.each(['2606:4700:4700::1111', '2001:4860:4860::8888', '2a00:1450:4001:80b::200e', '::ffff:8.8.8.8', '::ffff:808:808', '64:ff9b::808:808', '2002:808:808::1', '2001:200::1', '3ffe::1'])(
    'allows public %s',
    (ip) => {
      expect(rule(ip)).toBe('allowed');
    },
  );

  it('refuses a global address with a zone index, and text that is no address at all', () => {
    expect(rule('2606:4700:4700::1111%eth0')).toBe('scoped address (zone index)');
    for (const bad of ['localhost', '', '1.2.3', '::ffff:1.2.3.256', '1::2::3', '12345::', 'fe80::1%', '[::1', '127.0.0.1:80']) {
      expect(checkAddress(bad)).toEqual({ allowed: false, rule: 'not an IP address' });
    }
  });

  it('expands :: and an IPv4 tail into 16 bytes', () => {
    const hex = (s: string) => Buffer.from(parseIPv6(s)!.bytes).toString('hex');
    expect(hex('::1')).toBe('00000000000000000000000000000001');
    expect(hex('1::')).toBe('00010000000000000000000000000000');
    expect(hex('1:2:3:4:5:6:7:8')).toBe('00010002000300040005000600070008');
    expect(hex('::ffff:1.2.3.4')).toBe('00000000000000000000ffff01020304');
    expect(hex('a:b::c:d')).toBe('000a000b0000000000000000000c000d');
    expect(parseIPv6('fe80::1%eth0')!.zone).toBe('eth0');
    expect(parseIPv6('1.2.3.4')).toBeNull();
  });
});

describe('URL spellings reach the policy in their normalized form', () => {
  // What `new URL` turns the host into is what the handler checks and connects to.
  const hostOf = (u: string) => normalizeHost(new URL(u).hostname);
  it.each([
    ['http://2130706433/', 'loopback (127.0.0.0/8)'],
    ['http://0x7f.1/', 'loopback (127.0.0.0/8)'],
    ['http://0177.0.0.1/', 'loopback (127.0.0.0/8)'],
    ['http://127.1/', 'loopback (127.0.0.0/8)'],
    ['http://127.0.0.1./', 'loopback (127.0.0.0/8)'],
    ['http://%31%32%37.0.0.1/', 'loopback (127.0.0.0/8)'],
    ['http://①②⑦.0.0.1/', 'loopback (127.0.0.0/8)'],
    ['http://0/', 'unspecified (0.0.0.0/8)'],
    ['http://[::ffff:7f00:1]/', 'loopback (127.0.0.0/8) as IPv4-mapped IPv6'],
    ['http://[::ffff:127.0.0.1]/', 'loopback (127.0.0.0/8) as IPv4-mapped IPv6'],
    ['http://[0:0:0:0:0:0:0:1]/', 'loopback (::1)'],
    ['http://[::]/', 'unspecified (::)'],
    ['http://169.254.169.254/latest/meta-data/', 'link-local (169.254.0.0/16)'],
    ['http://0xa9fea9fe/', 'link-local (169.254.0.0/16)'],
    ['http://[64:ff9b::a9fe:a9fe]/', 'link-local (169.254.0.0/16) as NAT64'],
  ])('%s → %s', (u, expected) => {
    expect(rule(hostOf(u))).toContain(expected);
  });

  it('host names are not IP addresses (they are judged after lookup)', () => {
    expect(hostOf('http://ⓛocalhost/')).toBe('localhost');
    expect(hostOf('http://LOCALHOST./')).toBe('localhost');
    expect(rule(hostOf('http://127.0.0.1.nip.io/'))).toBe('not an IP address');
  });
});

describe('HTTP_HANDLER_ALLOW_HOSTS entries', () => {
  it('normalizes case, trailing dot, IDN and IP spellings', () => {
    expect(normalizeAllowHost('LocalHost.')).toBe('localhost');
    expect(normalizeAllowHost(' api.internal ')).toBe('api.internal');
    expect(normalizeAllowHost('my_service')).toBe('my_service');
    expect(normalizeAllowHost('127.0.0.1')).toBe('127.0.0.1');
    expect(normalizeAllowHost('::1')).toBe('::1');
    expect(normalizeAllowHost('[::1]')).toBe('::1');
    expect(normalizeAllowHost('bücher.example')).toBe('xn--bcher-kva.example');
  });
  it('refuses what is not a host name', () => {
    for (const bad of ['', ' ', 'http://x', 'a/b', 'a b', 'host:80', 'a..b', '-a.b', 'a@b', 'a?b', 'a#b', 'a%2eb', 'a\\b', 'x'.repeat(64) + '.com', '*.example.com']) {
      expect(normalizeAllowHost(bad)).toBeNull();
    }
  });
});
