import { connect, Socket } from 'node:net';
import { startTestApi, TestApi } from '../support/http';

/**
 * Slow and greedy clients cannot hold the server: a body or headers trickled
 * a byte a second are answered 408 (envelope) and the socket closed within
 * the request/headers timeout; a long-poll claim (whose request arrived in
 * time) is not cut by that timeout; connections beyond HTTP_MAX_CONNECTIONS
 * are closed at once while the first ones are held, and served again once
 * one of them goes.
 */

interface Trickle {
  /** Everything the server wrote. */
  received: () => string;
  /** Resolves with the ms from the first byte sent to the socket's close. */
  closed: Promise<number>;
  stop: () => void;
}

/** Sends `head` at once, then `rest` one byte per `everyMs`, until the server closes the socket. */
function trickle(port: number, head: string, rest: string, everyMs = 1000): Trickle {
  const s = connect(port, '127.0.0.1');
  let out = '';
  let i = 0;
  const t0 = Date.now();
  s.on('data', (d) => (out += d.toString()));
  s.on('error', () => undefined);
  s.write(head);
  const timer = setInterval(() => {
    if (i < rest.length && s.writable) s.write(rest[i++]);
  }, everyMs);
  const closed = new Promise<number>((resolve) =>
    s.on('close', () => {
      clearInterval(timer);
      resolve(Date.now() - t0);
    }),
  );
  return { received: () => out, closed, stop: () => (clearInterval(timer), s.destroy()) };
}

/** Resolves once connected; `closedAt` settles when the server closes it. */
function hold(port: number): Promise<{ socket: Socket; closed: Promise<void> }> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1');
    socket.on('error', () => undefined);
    const closed = new Promise<void>((r) => socket.on('close', () => r()));
    socket.once('connect', () => resolve({ socket, closed }));
    socket.once('error', reject);
  });
}

/**
 * The Host of the raw requests: a loopback name, which AUTH=off accepts. Any other
 * Host is refused 403 at once (DNS rebinding, src/auth/cross-site.ts), before the
 * body is read: the timeout would not be what answers.
 */
const HOST = 'Host: localhost';

const within = <T>(p: Promise<T>, ms: number): Promise<T | 'timeout'> => Promise.race([p, new Promise<'timeout'>((r) => setTimeout(() => r('timeout'), ms))]);

describe('slow clients (e2e)', () => {
  describe('timeouts', () => {
    let api: TestApi;
    let port: number;
    beforeAll(async () => {
      api = await startTestApi('e2e-slow', { HTTP_REQUEST_TIMEOUT_MS: '2000', HTTP_HEADERS_TIMEOUT_MS: '1000' });
      port = Number(new URL(api.url).port);
    });
    afterAll(async () => {
      await api?.close();
    });

    it('a body trickled at 1 byte/s → 408 envelope and the socket closed within HTTP_REQUEST_TIMEOUT_MS', async () => {
      const body = JSON.stringify({ type: 'diag.echo', payload: { pad: 'x'.repeat(40) } });
      const head = `POST /jobs HTTP/1.1\r\n${HOST}\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n`;
      // The same request sent at once is served: only the trickle makes it a 408.
      const fast = trickle(port, head + 'Connection: close\r\n\r\n' + body, '');
      await within(fast.closed, 5000);
      fast.stop();
      expect(fast.received()).toMatch(/^HTTP\/1\.1 201 /);
      const t = trickle(port, head + '\r\n', body);
      const ms = await within(t.closed, 8000);
      t.stop();
      expect(ms).not.toBe('timeout');
      expect(ms).toBeGreaterThanOrEqual(1500);
      expect(ms).toBeLessThan(5000);
      expect(t.received()).toMatch(/^HTTP\/1\.1 408 /);
      expect(t.received()).toMatch(/X-Request-Id: [0-9a-f-]{36}\r\n/);
      expect(t.received()).toContain('"code":"request_timeout"');
      expect(t.received().match(/HTTP\/1\.1 \d{3} /g)).toHaveLength(1);
    });

    it('headers trickled at 1 byte/s → closed within HTTP_HEADERS_TIMEOUT_MS', async () => {
      const t = trickle(port, `GET /healthz HTTP/1.1\r\n${HOST}\r\n`, 'X-Slow: ' + 'a'.repeat(60) + '\r\n\r\n');
      const ms = await within(t.closed, 8000);
      t.stop();
      expect(ms).not.toBe('timeout');
      expect(ms).toBeLessThan(4000);
      expect(t.received()).toMatch(/^HTTP\/1\.1 408 /);
    });

    it('a long-poll claim longer than the request timeout still answers (the request itself arrived in time)', async () => {
      await api.http.put('/queues/lp').send({ external: true }).expect(200);
      const t0 = Date.now();
      const res = await api.http.post('/queues/lp/claim').send({ workerId: 'w-lp', waitMs: 3500 });
      expect(res.status).toBe(200);
      expect(res.body).toEqual({ jobs: [] });
      expect(Date.now() - t0).toBeGreaterThanOrEqual(3000);
    });

    it('a bad value stops the start naming the variable', async () => {
      const { loadConfig } = await import('../../src/config/config');
      expect(() => loadConfig({ HTTP_REQUEST_TIMEOUT_MS: 'soon' })).toThrow(/HTTP_REQUEST_TIMEOUT_MS/);
      expect(() => loadConfig({ HTTP_REQUEST_TIMEOUT_MS: '1000', HTTP_HEADERS_TIMEOUT_MS: '2000' })).toThrow(/HTTP_HEADERS_TIMEOUT_MS/);
      expect(() => loadConfig({ HTTP_KEEP_ALIVE_TIMEOUT_MS: '0' })).toThrow(/HTTP_KEEP_ALIVE_TIMEOUT_MS/);
      expect(() => loadConfig({ HTTP_MAX_CONNECTIONS: '-1' })).toThrow(/HTTP_MAX_CONNECTIONS/);
    });
  });

  describe('connection cap', () => {
    let api: TestApi;
    let port: number;
    beforeAll(async () => {
      api = await startTestApi('e2e-maxconn', { HTTP_MAX_CONNECTIONS: '3' });
      port = Number(new URL(api.url).port);
    });
    afterAll(async () => {
      await api?.close();
    });

    it('connections beyond HTTP_MAX_CONNECTIONS are closed at once while the first ones are held', async () => {
      const held = [await hold(port), await hold(port), await hold(port)];
      const extra = await hold(port);
      expect(await within(extra.closed, 3000)).not.toBe('timeout');
      // The held ones are still open.
      for (const h of held) expect(await within(h.closed, 200)).toBe('timeout');
      held[0].socket.destroy();
      await held[0].closed;
      // A slot is free again (the server sees the close asynchronously: retry briefly).
      let status = 0;
      for (let i = 0; i < 20 && status !== 200; i++) {
        status = await fetch(`${api.url}/healthz`, { headers: { connection: 'close' } }).then((r) => r.status, () => 0);
        if (status !== 200) await new Promise((r) => setTimeout(r, 100));
      }
      expect(status).toBe(200);
      for (const h of held) h.socket.destroy();
    });
  });
});
