import * as net from 'node:net';
import { checkAddress } from '../../../src/core/address-policy';
import { UnrecoverableError } from '../../../src/core/handler';
import { HttpRequestClient, MAX_RESPONSE_BODY_BYTES, type HttpRequestClientOptions } from '../../../src/handlers/builtin/http-request/client';
import { AddressRefusedError, type ResolvedAddress } from '../../../src/handlers/builtin/http-request/guarded-lookup';
import { parseHttpRequestPayload } from '../../../src/handlers/builtin/http-request/payload';
import type { Json } from '../../../src/core/job';
import { startTestServer, type TestServer } from './servers';

/**
 * The http.request client against local servers on 127.0.0.1 only. Names are
 * resolved by an injected resolver (a.test, b.test → 127.0.0.1, allowed by
 * allowHosts; evil.test → 127.0.0.1, not allowed), never by DNS. Refusals are
 * proven without a connection: the servers count TCP connections and
 * net.Socket#connect is watched.
 */
describe('http.request client (local servers)', () => {
  let a: TestServer;
  let b: TestServer;
  let resolved: string[];
  const names: Record<string, ResolvedAddress[]> = {
    'a.test': [{ address: '127.0.0.1', family: 4 }],
    'b.test': [{ address: '127.0.0.1', family: 4 }],
    'evil.test': [{ address: '127.0.0.1', family: 4 }],
    'metadata.test': [{ address: '169.254.169.254', family: 4 }],
  };
  const resolve = async (host: string) => {
    resolved.push(host);
    const answer = names[host];
    if (!answer) throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${host}`), { code: 'ENOTFOUND' });
    return answer;
  };
  const client = (opts: HttpRequestClientOptions = {}) => new HttpRequestClient({ allowHosts: ['a.test', 'b.test'], resolve, ...opts });
  const run = (payload: Record<string, Json>, opts?: HttpRequestClientOptions, signal?: AbortSignal) => client(opts).execute(parseHttpRequestPayload(payload), signal);
  const A = (path: string) => `http://a.test:${a.port}${path}`;
  const B = (path: string) => `http://b.test:${b.port}${path}`;
  const failure = async (p: Promise<unknown>) => {
    try {
      await p;
    } catch (e) {
      return e as Error;
    }
    throw new Error('expected a failure');
  };

  beforeAll(async () => {
    a = await startTestServer('A');
    b = await startTestServer('B');
  });
  afterAll(async () => {
    await a?.close();
    await b?.close();
  });
  beforeEach(() => {
    resolved = [];
  });
  afterEach(() => jest.restoreAllMocks());

  describe('outcomes', () => {
    it('2xx → {status, headers, body, truncated}; set-cookie dropped, repeated headers joined', async () => {
      const r = await run({ method: 'POST', url: A('/echo?q=1'), headers: { 'X-Custom': 'v1' }, body: { hello: 'world' } });
      expect(r.status).toBe(200);
      expect(r.truncated).toBe(false);
      expect(r.headers['content-type']).toBe('application/json');
      expect(r.headers['x-multi']).toBe('a, b');
      expect(r.headers['set-cookie']).toBeUndefined();
      expect(JSON.parse(r.body)).toMatchObject({ server: 'A', method: 'POST', path: '/echo?q=1', custom: 'v1', contentType: 'application/json', body: '{"hello":"world"}' });
    });

    it('5xx → a retryable Error; other 4xx and a final 3xx → UnrecoverableError', async () => {
      for (const code of [500, 502, 503]) {
        const e = await failure(run({ method: 'GET', url: A(`/status/${code}`) }));
        expect(e).not.toBeInstanceOf(UnrecoverableError);
        expect(e.message).toBe(`http.request: GET http://a.test:${a.port} answered ${code}`);
      }
      for (const code of [400, 401, 404, 410, 429, 304]) {
        const e = await failure(run({ method: 'GET', url: A(`/status/${code}`) }));
        expect(e).toBeInstanceOf(UnrecoverableError);
        expect(e.message).toContain(`answered ${code}`);
      }
    });

    it('connection refused → a retryable Error that names the origin, not the address', async () => {
      const closed = await startTestServer('closed');
      const port = closed.port;
      await closed.close();
      const e = await failure(run({ method: 'GET', url: `http://a.test:${port}/` }));
      expect(e).not.toBeInstanceOf(UnrecoverableError);
      expect(e.message).toBe(`http.request: connection error to http://a.test:${port}: ECONNREFUSED`);
    });

    it('caps the body at 64 KiB: stops reading and marks it truncated', async () => {
      const exact = await run({ method: 'GET', url: A(`/bytes/${MAX_RESPONSE_BODY_BYTES}`) });
      expect(exact.body.length).toBe(MAX_RESPONSE_BODY_BYTES);
      expect(exact.truncated).toBe(false);
      const big = await run({ method: 'GET', url: A('/bytes/5000000') });
      expect(big.status).toBe(200);
      expect(big.body.length).toBe(MAX_RESPONSE_BODY_BYTES);
      expect(big.truncated).toBe(true);
      // The server could not send its 5 MB: the client hung up.
      await waitFor(() => a.abandoned >= 1);
    });

    it('timeoutMs bounds the whole request → a retryable Error', async () => {
      const t0 = Date.now();
      const e = await failure(run({ method: 'GET', url: A('/slow'), timeoutMs: 300 }));
      expect(Date.now() - t0).toBeGreaterThanOrEqual(290);
      expect(Date.now() - t0).toBeLessThan(3000);
      expect(e).not.toBeInstanceOf(UnrecoverableError);
      expect(e.message).toBe('http.request: no complete response within timeoutMs=300');
    });

    it("the job's AbortSignal (cancellation, job timeout) aborts the request at once", async () => {
      const before = a.abandoned;
      const ac = new AbortController();
      setTimeout(() => ac.abort('cancelled'), 150);
      const t0 = Date.now();
      const e = await failure(run({ method: 'GET', url: A('/slow'), timeoutMs: 30_000 }, {}, ac.signal));
      expect(Date.now() - t0).toBeLessThan(2000);
      expect(e.message).toBe('http.request: aborted (cancelled)');
      await waitFor(() => a.abandoned > before);
      // Already aborted: no connection at all.
      const conns = a.connections;
      const e2 = await failure(run({ method: 'GET', url: A('/echo') }, {}, AbortSignal.abort('timeout')));
      expect(e2.message).toBe('http.request: aborted (timeout)');
      expect(a.connections).toBe(conns);
    });
  });

  describe('redirects', () => {
    it('follows up to 3 and refuses the 4th', async () => {
      const r = await run({ method: 'GET', url: A('/chain/3') });
      expect(JSON.parse(r.body)).toMatchObject({ server: 'A', path: '/echo' });
      const e = await failure(run({ method: 'GET', url: A('/chain/4') }));
      expect(e).toBeInstanceOf(UnrecoverableError);
      expect(e.message).toBe(`http.request: more than 3 redirects (last from http://a.test:${a.port})`);
      expect(a.paths.filter((p) => p === '/echo').length).toBeGreaterThan(0);
    });

    const creds = { authorization: 'Bearer t0ken', cookie: 'sid=1', 'proxy-authorization': 'Basic eA==', 'x-custom': 'kept' };
    it('keeps Authorization, Cookie, Proxy-Authorization on a same-origin redirect', async () => {
      const r = await run({ method: 'GET', url: A(`/redirect?to=${encodeURIComponent('/echo')}`), headers: creds });
      expect(JSON.parse(r.body)).toMatchObject({ server: 'A', authorization: 'Bearer t0ken', cookie: 'sid=1', proxyAuthorization: 'Basic eA==', custom: 'kept' });
    });

    it('drops them on a cross-origin redirect (other host, or same host on another port)', async () => {
      for (const target of [B('/echo'), `http://a.test:${b.port}/echo`]) {
        const r = await run({ method: 'GET', url: A(`/redirect?to=${encodeURIComponent(target)}`), headers: creds });
        expect(JSON.parse(r.body)).toMatchObject({ server: 'B', authorization: null, cookie: null, proxyAuthorization: null, custom: 'kept' });
      }
    });

    it('303 → GET without body; 301/302 turn POST into GET; 307/308 keep method and body', async () => {
      const post = (code: number, method = 'POST') =>
        run({ method, url: A(`/redirect?code=${code}&to=${encodeURIComponent('/echo')}`), body: 'payload-body', headers: { 'content-type': 'text/x-test' } }).then((r) => JSON.parse(r.body));
      for (const code of [301, 302, 303]) expect(await post(code)).toMatchObject({ method: 'GET', body: '', contentType: null });
      expect(await post(303, 'PUT')).toMatchObject({ method: 'GET', body: '' });
      expect(await post(302, 'PUT')).toMatchObject({ method: 'PUT', body: 'payload-body', contentType: 'text/x-test' });
      for (const code of [307, 308]) expect(await post(code)).toMatchObject({ method: 'POST', body: 'payload-body', contentType: 'text/x-test' });
    });

    it("never reads a redirect's body: one that never ends does not hold the request", async () => {
      const before = a.abandoned;
      const r = await run({ method: 'GET', url: A(`/redirect?endless=1&to=${encodeURIComponent('/whoami')}`), timeoutMs: 2000 });
      expect(r.body).toBe('A');
      await waitFor(() => a.abandoned > before);
    });

    it('refuses a redirect to a non-http scheme', async () => {
      const e = await failure(run({ method: 'GET', url: A(`/redirect?to=${encodeURIComponent('file:///etc/passwd')}`) }));
      expect(e).toBeInstanceOf(UnrecoverableError);
      expect(e.message).toContain('redirected to a file: URL');
    });
  });

  describe('SSRF: refused before any connection', () => {
    let sockets: ReturnType<typeof watchSockets>;
    beforeEach(() => {
      sockets = watchSockets();
    });
    const refused = async (url: string, rule: string, opts: HttpRequestClientOptions = {}) => {
      const e = await failure(run({ method: 'GET', url }, opts));
      expect(e).toBeInstanceOf(UnrecoverableError);
      // The rule is kept for the server (e.rule), never shown: the message says only that the policy refused it.
      expect(e.message).toContain('refused by the address policy');
      expect(e.message).not.toContain(rule.split(' ')[0]);
      expect((e as AddressRefusedError).rule).toBe(rule);
      sockets.expectNoneConnected();
      return e;
    };

    it.each([
      ['http://169.254.169.254/latest/meta-data/', 'link-local (169.254.0.0/16)'],
      ['http://[fe80::1]/', 'link-local (fe80::/10)'],
      ['http://0xa9fea9fe/', 'link-local (169.254.0.0/16)'],
      ['http://2130706433/', 'loopback (127.0.0.0/8)'],
      ['http://0x7f.1/', 'loopback (127.0.0.0/8)'],
      ['http://127.1/', 'loopback (127.0.0.0/8)'],
      ['http://[::1]/', 'loopback (::1)'],
      ['http://[::ffff:7f00:1]/', 'loopback (127.0.0.0/8) as IPv4-mapped IPv6'],
      ['http://10.0.0.1/', 'private (10.0.0.0/8)'],
      ['http://100.64.0.1/', 'CGNAT (100.64.0.0/10)'],
      ['http://0.0.0.0/', 'unspecified (0.0.0.0/8)'],
      ['http://[::]/', 'unspecified (::)'],
      ['http://[fd00::1]/', 'unique local (fc00::/7)'],
      ['http://224.0.0.1/', 'multicast (224.0.0.0/4)'],
      ['https://192.168.1.1/', 'private (192.168.0.0/16)'],
    ])('%s → %s', async (url, rule) => {
      await refused(url, rule);
      // An IP literal: no lookup, and no socket ever created.
      expect(resolved).toEqual([]);
      expect(sockets.created()).toBe(0);
    });

    it('loopback by IP and [::ffff:127.0.0.1] on a live local server: refused, the server sees no connection', async () => {
      const before = a.connections;
      await refused(`http://127.0.0.1:${a.port}/echo`, 'loopback (127.0.0.0/8)');
      await refused(`http://[::ffff:127.0.0.1]:${a.port}/echo`, 'loopback (127.0.0.0/8) as IPv4-mapped IPv6');
      await refused(`http://127.0.0.1.:${a.port}/echo`, 'loopback (127.0.0.0/8)');
      expect(sockets.created()).toBe(0);
      expect(a.connections).toBe(before);
    });

    it('a host name resolving to a refused address fails in the lookup, before connect, without leaking the address', async () => {
      const before = a.connections;
      const e = await refused(`http://evil.test:${a.port}/echo`, 'loopback (127.0.0.0/8)');
      expect(e.message).toBe(`http.request: refused to connect to evil.test:${a.port}: refused by the address policy`);
      expect(e.message).not.toContain('127.0.0.1');
      await refused('http://metadata.test/', 'link-local (169.254.0.0/16)');
      expect(resolved).toEqual(['evil.test', 'metadata.test']);
      expect(a.connections).toBe(before);
    });

    it('a redirect from an allowed host to a private IP or a private name is refused', async () => {
      const beforeB = b.connections;
      for (const [target, rule] of [
        [`http://127.0.0.1:${b.port}/echo`, 'loopback (127.0.0.0/8)'],
        [`http://[::ffff:127.0.0.1]:${b.port}/echo`, 'loopback (127.0.0.0/8) as IPv4-mapped IPv6'],
        [`http://evil.test:${b.port}/echo`, 'loopback (127.0.0.0/8)'],
        ['http://169.254.169.254/latest/meta-data/', 'link-local (169.254.0.0/16)'],
      ]) {
        const e = await failure(run({ method: 'GET', url: A(`/redirect?to=${encodeURIComponent(target)}`), headers: { authorization: 'Bearer x' } }));
        expect(e).toBeInstanceOf(UnrecoverableError);
        expect(e.message).toContain('refused by the address policy');
        expect(e.message).not.toContain(rule.split(' ')[0]);
        expect((e as AddressRefusedError).rule).toBe(rule);
      }
      expect(b.connections).toBe(beforeB);
    });

    it('HTTP_HANDLER_ALLOW_HOSTS matches exact names only (case and trailing dot aside)', async () => {
      await refused(`http://sub.a.test:${a.port}/`, 'loopback (127.0.0.0/8)', { resolve: async () => [{ address: '127.0.0.1', family: 4 }] });
      jest.restoreAllMocks();
      const r = await run({ method: 'GET', url: `http://A.TEST.:${a.port}/whoami` });
      expect(r.body).toBe('A');
    });
  });

  describe('SSRF: a DNS answer that changes between lookups', () => {
    // 127.0.0.2 plays a public address (the policy is widened for it alone);
    // 127.0.0.1 is the internal victim, on the same port.
    let pub: TestServer;
    let victim: TestServer;
    const widened = (ip: string) => (ip === '127.0.0.2' ? { allowed: true as const } : checkAddress(ip));
    let answers: ResolvedAddress[][];
    let calls: number;
    const rebinding = async () => answers[Math.min(calls++, answers.length - 1)];

    beforeAll(async () => {
      for (let i = 0; !victim && i < 20; i++) {
        pub = await startTestServer('public', '127.0.0.2');
        victim = await startTestServer('victim', '127.0.0.1', pub.port).catch(async () => {
          await pub.close();
          return undefined as unknown as TestServer;
        });
      }
    });
    afterAll(async () => {
      await pub?.close();
      await victim?.close();
    });
    beforeEach(() => {
      calls = 0;
    });

    it('first answer public, second private: one lookup, and the connect goes to the address checked', async () => {
      answers = [[{ address: '127.0.0.2', family: 4 }], [{ address: '127.0.0.1', family: 4 }]];
      const r = await run({ method: 'GET', url: `http://rebind.test:${pub.port}/whoami` }, { resolve: rebinding, check: widened, allowHosts: [] });
      expect(r.body).toBe('public');
      expect(calls).toBe(1);
      expect(victim.connections).toBe(0);
    });

    it('a private answer at connect time is refused, before any socket connects', async () => {
      answers = [[{ address: '127.0.0.1', family: 4 }]];
      const sockets = watchSockets();
      const e = await failure(run({ method: 'GET', url: `http://rebind.test:${pub.port}/whoami` }, { resolve: rebinding, check: widened, allowHosts: [] }));
      expect(e).toBeInstanceOf(UnrecoverableError);
      expect(e.message).toContain('refused by the address policy');
      expect((e as AddressRefusedError).rule).toBe('loopback (127.0.0.0/8)');
      sockets.expectNoneConnected();
      expect(calls).toBe(1);
      expect(victim.connections).toBe(0);
    });

    it('a mixed answer keeps only the allowed addresses', async () => {
      answers = [[{ address: '127.0.0.1', family: 4 }, { address: '127.0.0.2', family: 4 }]];
      for (let i = 0; i < 3; i++) {
        const r = await run({ method: 'GET', url: `http://rebind.test:${pub.port}/whoami` }, { resolve: rebinding, check: widened, allowHosts: [] });
        expect(r.body).toBe('public');
      }
      expect(victim.connections).toBe(0);
    });
  });
});


/**
 * Watches client sockets (jest spy on net.Socket#connect, the entry of every
 * client connection, host name or IP): how many were created, and that none
 * of them ever connected (no 'connect' event, no remote address).
 */
function watchSockets() {
  const seen: { socket: net.Socket; connected: boolean }[] = [];
  const original = net.Socket.prototype.connect;
  jest.spyOn(net.Socket.prototype, 'connect').mockImplementation(function (this: net.Socket, ...args: unknown[]) {
    const entry = { socket: this, connected: false };
    seen.push(entry);
    this.once('connect', () => (entry.connected = true));
    return (original as (...a: unknown[]) => net.Socket).apply(this, args);
  });
  return {
    created: () => seen.length,
    expectNoneConnected: () => {
      for (const { socket, connected } of seen) {
        expect(connected).toBe(false);
        expect(socket.remoteAddress).toBeUndefined();
      }
    },
  };
}

async function waitFor(cond: () => boolean, ms = 3000): Promise<void> {
  const until = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > until) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, 20));
  }
}
