import { connect, type Socket } from 'node:net';
import { startTestApi, type TestApi } from '../support/http';
import { sleep } from '../support/redis';
import { waitUntil } from '../support/timing';

/**
 * The last moments of shutdown: once app.close() has reached the HTTP server,
 * Fastify answers what still arrives on an open connection with 503 before
 * any hook runs (`return503OnClosing`). That answer must be the API.md error
 * envelope with X-Request-Id, like every other error.
 *
 * How: a keep-alive connection is opened and a request started on it
 * (request line only), so the server cannot finish closing and the socket is
 * not idle; app.close() is called; once the server has stopped accepting
 * connections (it is closing), the request is finished.
 */
describe('shutdown: the 503 of a closing server (e2e)', () => {
  let api: TestApi;
  beforeAll(async () => {
    api = await startTestApi('e2e-closing-503');
  });
  afterAll(async () => {
    await api?.close().catch(() => undefined);
  });

  const port = () => Number(new URL(api.url).port);
  /** True while the server accepts new connections. */
  const accepting = () =>
    new Promise<boolean>((resolve) => {
      const s = connect(port(), '127.0.0.1');
      s.once('connect', () => (s.destroy(), resolve(true)));
      s.once('error', () => resolve(false));
    });
  /** Everything the socket receives until it closes. */
  const readAll = (s: Socket) =>
    new Promise<string>((resolve) => {
      let text = '';
      s.on('data', (d) => (text += d.toString('utf8')));
      s.once('close', () => resolve(text));
    });

  it('a request finished after app.close() started → 503 unavailable in the error envelope, with X-Request-Id', async () => {
    const s = connect(port(), '127.0.0.1');
    await new Promise((r) => s.once('connect', r));
    const answer = readAll(s);
    s.write('GET /queues HTTP/1.1\r\nHost: 127.0.0.1\r\n');
    await sleep(100);
    const closing = api.app.close();
    await waitUntil('server stopped accepting connections', async () => !(await accepting()), 10_000);
    s.write('Connection: keep-alive\r\nX-Request-Id: closing-1\r\n\r\n');
    const timer = setTimeout(() => s.destroy(), 5000);
    const raw = await answer;
    clearTimeout(timer);
    await closing;
    const [head, body] = raw.split('\r\n\r\n');
    expect(head.split('\r\n')[0]).toBe('HTTP/1.1 503 Service Unavailable');
    expect(head.toLowerCase()).toContain('x-request-id: closing-1');
    expect(head.toLowerCase()).toContain('content-type: application/json');
    expect(head.toLowerCase()).toContain('connection: close');
    expect(JSON.parse(body)).toEqual({
      error: { code: 'unavailable', message: expect.stringMatching(/shutting down/), details: [], requestId: 'closing-1' },
    });
  });
});
