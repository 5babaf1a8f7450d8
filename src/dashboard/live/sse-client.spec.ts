import { createServer, Server } from 'node:http';
import { connect, Socket } from 'node:net';
import { SseClient } from './sse-client';

/** A real HTTP response whose client connects and then never reads. */
async function stalledClient(maxBufferedBytes: number): Promise<{ client: SseClient; server: Server; socket: Socket }> {
  let made!: (c: SseClient) => void;
  const got = new Promise<SseClient>((r) => (made = r));
  const server = createServer((_req, res) => {
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    made(new SseClient(res, 'default', null, maxBufferedBytes));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as { port: number }).port;
  const socket = connect(port, '127.0.0.1');
  socket.write('GET / HTTP/1.1\r\nHost: x\r\n\r\n');
  socket.pause(); // never reads: the kernel buffers fill, then the response's own buffer grows
  return { client: await got, server, socket };
}

describe('SseClient', () => {
  it('drops a client that stops reading once its unsent bytes pass the bound', async () => {
    const { client, server, socket } = await stalledClient(256 * 1024);
    let closed = false;
    client.onClose(() => (closed = true));
    const payload = { text: 'x'.repeat(1000) };
    let sent = 0;
    for (let i = 0; i < 100_000 && client.send('job', payload); i++) {
      sent++;
      if (i % 100 === 0) await new Promise((r) => setImmediate(r));
    }
    expect(closed).toBe(true);
    expect(client.isClosed).toBe(true);
    expect(client.send('job', payload)).toBe(false);
    // It was dropped after a bounded amount (kernel buffers plus 256 KiB), not after everything.
    expect(sent).toBeLessThan(100_000);
    socket.destroy();
    await new Promise((r) => server.close(r));
  });

  it('a reading client is never dropped', async () => {
    const server = createServer((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      const c = new SseClient(res, 'default', null, 64 * 1024);
      let n = 0;
      const tick = () => {
        if (n++ < 2000 && c.send('job', { n, text: 'y'.repeat(500) })) setImmediate(tick);
        else c.close();
      };
      tick();
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const port = (server.address() as { port: number }).port;
    const body = await fetch(`http://127.0.0.1:${port}/`).then((r) => r.text());
    expect(body.split('event: job').length - 1).toBe(2000);
    await new Promise((r) => server.close(r));
  });
});
