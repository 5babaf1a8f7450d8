import * as http from 'node:http';
import type { AddressInfo, Socket } from 'node:net';

/**
 * A local HTTP server for the http.request tests, on a loopback address this
 * test started (never anything else). It counts TCP connections, so a test
 * can prove a refused request never connected, and records every request.
 *
 * Routes: `/echo` (method, path, credential headers, content-type and body as
 * JSON), `/status/<n>`, `/bytes/<n>` (n bytes of "a"), `/slow` (headers, then
 * nothing), `/redirect?to=<url>&code=<3xx>&endless=1?` (a body that never ends), `/chain/<n>` (n redirects, then
 * /echo), `/whoami` (the server's name).
 */
export interface TestServer {
  name: string;
  host: string;
  port: number;
  /** TCP connections accepted so far. */
  connections: number;
  /** Request paths seen so far. */
  paths: string[];
  /** Requests whose socket closed before the response finished. */
  abandoned: number;
  url(path: string): string;
  close(): Promise<void>;
}

export async function startTestServer(name: string, host = '127.0.0.1', port = 0): Promise<TestServer> {
  const sockets = new Set<Socket>();
  const s: TestServer = {
    name,
    host,
    port: 0,
    connections: 0,
    paths: [],
    abandoned: 0,
    url: (path) => `http://${host}:${s.port}${path}`,
    close: () =>
      new Promise((res) => {
        for (const sock of sockets) sock.destroy();
        server.close(() => res());
      }),
  };
  const server = http.createServer((req, res) => {
    s.paths.push(req.url ?? '');
    res.on('close', () => {
      if (!res.writableFinished) s.abandoned++;
    });
    const u = new URL(req.url ?? '/', 'http://x');
    const parts = u.pathname.split('/').filter(Boolean);
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const route = parts[0];
      if (route === 'echo') {
        res.setHeader('content-type', 'application/json');
        res.setHeader('set-cookie', 'session=server-secret');
        res.setHeader('x-multi', ['a', 'b']);
        res.end(
          JSON.stringify({
            server: name,
            method: req.method,
            path: req.url,
            authorization: req.headers.authorization ?? null,
            cookie: req.headers.cookie ?? null,
            proxyAuthorization: req.headers['proxy-authorization'] ?? null,
            contentType: req.headers['content-type'] ?? null,
            custom: req.headers['x-custom'] ?? null,
            body: Buffer.concat(chunks).toString('utf8'),
          }),
        );
      } else if (route === 'status') {
        res.statusCode = Number(parts[1]);
        res.end(`status ${parts[1]}`);
      } else if (route === 'bytes') {
        const n = Number(parts[1]);
        res.setHeader('content-length', n);
        const block = Buffer.alloc(16 * 1024, 'a');
        let left = n;
        const pump = () => {
          while (left > 0) {
            const c = block.subarray(0, Math.min(left, block.length));
            left -= c.length;
            if (!res.write(c)) return void res.once('drain', pump);
          }
          res.end();
        };
        pump();
      } else if (route === 'slow') {
        res.writeHead(200, { 'content-type': 'text/plain' });
        res.write('partial');
      } else if (route === 'redirect') {
        res.writeHead(Number(u.searchParams.get('code') ?? 302), { location: u.searchParams.get('to') ?? '/' });
        if (u.searchParams.get('endless') !== '1') return void res.end();
        // A redirect whose body never ends: the client must not wait for it.
        const timer = setInterval(() => res.write(Buffer.alloc(64 * 1024, 'r')), 5);
        res.on('close', () => clearInterval(timer));
      } else if (route === 'chain') {
        const n = Number(parts[1]);
        res.writeHead(302, { location: n > 1 ? `/chain/${n - 1}` : '/echo' });
        res.end();
      } else if (route === 'whoami') {
        res.end(name);
      } else {
        res.statusCode = 404;
        res.end();
      }
    });
  });
  server.on('connection', (sock: Socket) => {
    s.connections++;
    sockets.add(sock);
    sock.on('close', () => sockets.delete(sock));
  });
  await new Promise<void>((res, rej) => {
    server.once('error', rej);
    server.listen(port, host, () => res());
  });
  s.port = (server.address() as AddressInfo).port;
  return s;
}
