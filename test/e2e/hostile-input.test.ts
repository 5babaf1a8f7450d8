import { connect } from 'node:net';
import { startTestApi, TestApi } from '../support/http';

/**
 * Hostile input gets a 4xx in the API.md envelope on every route, never a 500,
 * and every error of every layer (router, body parser, Node's HTTP parser)
 * carries the envelope and an X-Request-Id:
 * - JSON nested deeper than 64 levels → 400 naming the limit;
 * - NUL or lone surrogates in any body string (keys too), query value or
 *   path parameter → 400 naming the field (nothing reaches Redis or PostgreSQL);
 * - tampered cursors → 400 `cursor`;
 * - `null` where the field is not documented nullable → 400 `must not be null`;
 * - bad URL 400, over-long id 414, headers too large 431, malformed request
 *   line 400, missing or foreign content type 415 `unsupported_media_type`.
 */

/** Sends raw bytes; resolves with everything the server wrote before it closed the socket. */
function rawExchange(port: number, text: string, timeoutMs = 5000): Promise<string> {
  return new Promise((resolve, reject) => {
    const s = connect(port, '127.0.0.1');
    let out = '';
    const timer = setTimeout(() => {
      s.destroy();
      reject(new Error(`socket still open after ${timeoutMs} ms; got ${JSON.stringify(out.slice(0, 200))}`));
    }, timeoutMs);
    s.on('data', (d) => (out += d.toString('latin1')));
    s.on('error', () => undefined);
    s.on('close', () => {
      clearTimeout(timer);
      resolve(out);
    });
    s.write(text);
  });
}

/** Parses a raw HTTP/1.1 response: status, lower-cased headers, JSON body. */
function parseRaw(text: string): { status: number; headers: Record<string, string>; body: { error: { code: string; message: string; requestId: string; details: unknown[] } } } {
  const [head, body] = text.split('\r\n\r\n');
  const [statusLine, ...lines] = head.split('\r\n');
  const headers = Object.fromEntries(lines.map((l) => [l.slice(0, l.indexOf(':')).toLowerCase(), l.slice(l.indexOf(':') + 1).trim()]));
  return { status: Number(statusLine.split(' ')[1]), headers, body: JSON.parse(body) };
}

function expectEnvelope(res: { status: number; headers: Record<string, string>; body: unknown }, status: number, code: string): void {
  expect(res.status).toBe(status);
  const body = res.body as { error: { code: string; message: string; requestId: string; details: unknown[] } };
  expect(body.error).toEqual({ code, message: expect.any(String), details: expect.any(Array), requestId: expect.any(String) });
  expect(res.headers['x-request-id']).toBe(body.error.requestId);
}

/**
 * The Host of the raw requests: a loopback name, which AUTH=off accepts (any other
 * Host is 403 before the body is read: DNS rebinding, src/auth/cross-site.ts).
 */
const HOST = 'Host: localhost';

const nested = (depth: number, leaf = '1') => '['.repeat(depth) + leaf + ']'.repeat(depth);

describe('hostile input (e2e)', () => {
  let api: TestApi;
  let port: number;
  const UUID = '01890a5d-ac96-774b-b2d8-3d5bbd4a1a5e';
  beforeAll(async () => {
    api = await startTestApi('e2e-hostile');
    port = Number(new URL(api.url).port);
  });
  afterAll(async () => {
    await api?.close();
  });

  describe('JSON nesting', () => {
    const routes: [string, string, (inner: string) => string][] = [
      ['POST', '/jobs', (x) => `{"type":"diag.echo","payload":{"d":${x}}}`],
      ['POST', '/jobs/batch', (x) => `{"jobs":[{"type":"diag.echo","payload":{"d":${x}}}]}`],
      ['PUT', '/queues/deep', (x) => `{"defaults":${x}}`],
      ['POST', '/schedules', (x) => `{"name":"deep","cron":"* * * * *","type":"diag.echo","payload":{"d":${x}}}`],
      ['PATCH', `/schedules/${UUID}`, (x) => `{"payload":{"d":${x}}}`],
      ['POST', '/queues/deep/claim', (x) => `{"workerId":"w","x":${x}}`],
      ['POST', `/jobs/${UUID}/heartbeat`, (x) => `{"lockToken":"t","progress":{"d":${x}}}`],
      ['POST', `/jobs/${UUID}/complete`, (x) => `{"lockToken":"t","result":${x}}`],
      ['POST', `/jobs/${UUID}/fail`, (x) => `{"lockToken":"t","error":{"message":${x}}}`],
      ['POST', `/jobs/${UUID}/retry`, (x) => `{"payload":{"d":${x}}}`],
      ['POST', '/jobs/dlq/retry', (x) => `{"queue":${x}}`],
    ];
    it.each(routes)('%s %s: 5,000 levels → 400 naming the limit', async (method, path, body) => {
      const res = await api.http[method.toLowerCase() as 'post'](path).set('Content-Type', 'application/json').send(body(nested(5000)));
      expectEnvelope(res, 400, 'validation_failed');
      expect(res.body.error.message).toMatch(/deeper than 64 levels/);
    });

    it('64 levels are accepted, 65 are not (the body itself is level 1)', async () => {
      // body (1) → payload (2) → d: 62 arrays (3..64).
      const ok = await api.http.post('/jobs').set('Content-Type', 'application/json').send(`{"type":"diag.echo","payload":{"d":${nested(62)}}}`);
      expect(ok.status).toBe(201);
      const deep = await api.http.post('/jobs').set('Content-Type', 'application/json').send(`{"type":"diag.echo","payload":{"d":${nested(63)}}}`);
      expectEnvelope(deep, 400, 'validation_failed');
      // Brackets inside strings do not count.
      const inString = await api.http.post('/jobs').send({ type: 'diag.echo', payload: { s: '[{'.repeat(1000) + '\\"[' } });
      expect(inString.status).toBe(201);
    });
  });

  describe('NUL and lone surrogates', () => {
    it.each([
      ['a NUL in a payload value', '{"type":"diag.echo","queue":"nul","payload":{"a":{"b":["x","y\\u0000"]}}}', 'payload.a.b.1', /NUL/],
      ['a NUL in a payload key', '{"type":"diag.echo","queue":"nul","payload":{"k\\u0000":1}}', 'payload.k\uFFFD', /key must not contain NUL/],
      ['a lone surrogate in a payload value', '{"type":"diag.echo","queue":"nul","payload":{"lone":"\\ud800"}}', 'payload.lone', /lone UTF-16 surrogates/],
      ['a lone low surrogate', '{"type":"diag.echo","queue":"nul","payload":{"low":"a\\udc00b"}}', 'payload.low', /lone/],
      ['a NUL in the idempotency key', '{"type":"diag.echo","queue":"nul","idempotencyKey":"k\\u0000"}', 'idempotencyKey', /NUL/],
    ])('POST /jobs with %s → 400 naming the field; nothing is stored', async (_name, text, path, message) => {
      const res = await api.http.post('/jobs').set('Content-Type', 'application/json').send(text);
      expectEnvelope(res, 400, 'validation_failed');
      expect(res.body.error.details).toEqual([{ path, message: expect.stringMatching(message) }]);
      expect((await api.http.get('/queues/nul')).status).toBe(404);
    });

    it('POST /jobs/batch names the job', async () => {
      const res = await api.http.post('/jobs/batch').set('Content-Type', 'application/json').send('{"jobs":[{"type":"diag.echo"},{"type":"diag.echo","payload":{"x":"\\udfff"}}]}');
      expectEnvelope(res, 400, 'validation_failed');
      expect(res.body.error.details[0].path).toBe('jobs.1.payload.x');
    });

    it('a surrogate pair (escaped or UTF-8) and an escaped backslash before "u0000" are fine', async () => {
      const res = await api.http.post('/jobs').set('Content-Type', 'application/json').send('{"type":"diag.echo","payload":{"e":"\\ud83d\\ude00","f":"😀","g":"\\\\u0000"}}');
      expect(res.status).toBe(201);
      expect(res.body.payload).toEqual({ e: '😀', f: '😀', g: '\\u0000' });
      expect((await api.http.get(`/jobs/${res.body.id}`)).body.payload).toEqual(res.body.payload);
    });

    it.each([
      ['/jobs?queue=%00', 'queue'],
      ['/jobs?type=a%00b', 'type'],
      ['/jobs?status=%00', 'status'],
      ['/jobs?cursor=%00', 'cursor'],
      ['/jobs/dlq/all?queue=%00', 'queue'],
      ['/jobs/dlq/all?type=%00', 'type'],
      ['/jobs/dlq/all?queue=a&type=%00', 'type'],
      ['/schedules/preview?cron=%00', 'cron'],
      [`/jobs/${UUID}%00`, 'id'],
      ['/queues/a%00', 'name'],
      ['/schedules/%00', 'id'],
    ])('GET %s → 400 naming %s', async (url, path) => {
      const res = await api.http.get(url);
      expectEnvelope(res, 400, 'validation_failed');
      expect(res.body.error.details).toEqual([{ path, message: expect.stringMatching(/NUL/) }]);
    });

    it('POST and PATCH /schedules: name and payload strings', async () => {
      const base = { name: 'ok', cron: '0 3 * * *', type: 'diag.echo', payload: { a: 1 } };
      for (const [body, path] of [
        [{ ...base, name: 'n\u0000' }, 'name'],
        [{ ...base, payload: { a: '\u0000' } }, 'payload.a'],
        [{ ...base, payload: { a: 'x\ud800' } }, 'payload.a'],
        [{ ...base, payload: { ['\ud800']: 1 } }, 'payload.\uFFFD'],
        [{ ...base, timezone: 'UTC\u0000' }, 'timezone'],
      ] as const) {
        const res = await api.http.post('/schedules').send(body);
        expectEnvelope(res, 400, 'validation_failed');
        expect(res.body.error.details[0].path).toBe(path);
      }
      const created = await api.http.post('/schedules').send(base);
      expect(created.status).toBe(201);
      for (const [body, path] of [
        [{ name: '\u0000' }, 'name'],
        [{ payload: { nested: ['\udc00'] } }, 'payload.nested.0'],
      ] as const) {
        const res = await api.http.patch(`/schedules/${created.body.id}`).send(body);
        expectEnvelope(res, 400, 'validation_failed');
        expect(res.body.error.details[0].path).toBe(path);
      }
      expect((await api.http.get(`/schedules/${created.body.id}`)).body).toMatchObject({ name: 'ok', payload: { a: 1 } });
    });

    it('external worker strings (error message, log lines, worker id)', async () => {
      for (const [path, body, field] of [
        [`/jobs/${UUID}/fail`, { lockToken: 't', error: { message: 'boom\u0000' } }, 'error.message'],
        [`/jobs/${UUID}/heartbeat`, { lockToken: 't', logs: ['ok', 'x\ud800'] }, 'logs.1'],
        ['/queues/ext/claim', { workerId: 'w\u0000' }, 'workerId'],
      ] as const) {
        const res = await api.http.post(path).send(body);
        expectEnvelope(res, 400, 'validation_failed');
        expect(res.body.error.details[0].path).toBe(field);
      }
    });
  });

  describe('cursors', () => {
    const b64 = (s: string) => Buffer.from(s, 'utf8').toString('base64url');
    it.each([
      ['/jobs/dlq/all', b64(`2026-13-45T99:99:99.000000Z|${UUID}`)],
      ['/jobs/dlq/all', b64(`2026-02-30T10:00:00.000000Z|${UUID}`)],
      ['/jobs/dlq/all', b64(`2026-12-01T10:00:00.000000Z|${UUID}|`)],
      ['/jobs/dlq/all', b64('2026-12-01T10:00:00.000000Z|not-a-uuid')],
      ['/jobs', 'AYkKXayWd0uy2D1bvUoaXf'],
      ['/jobs', 'AYkKXayWd0uy2D1bvUoaX'],
      ['/jobs', b64(`2026-12-01T10:00:00.000000Z|${UUID}`)],
    ])('GET %s?cursor=%s → 400 cursor', async (path, cursor) => {
      const res = await api.http.get(`${path}?cursor=${cursor}`);
      expectEnvelope(res, 400, 'validation_failed');
      expect(res.body.error.details).toEqual([{ path: 'cursor', message: expect.any(String) }]);
    });
  });

  describe('null', () => {
    it.each([
      ['/jobs', 'post', { type: 'diag.echo', queue: null }, 'queue'],
      ['/jobs', 'post', { type: 'diag.echo', payload: null }, 'payload'],
      ['/jobs', 'post', { type: 'diag.echo', backoff: { type: 'fixed', delayMs: null } }, 'backoff.delayMs'],
      ['/jobs/batch', 'post', { jobs: [{ type: 'diag.echo' }, { type: 'diag.echo', priority: null }] }, 'jobs.1.priority'],
      ['/queues/nq', 'put', { defaults: { maxAttempts: null } }, 'defaults.maxAttempts'],
      ['/queues/nq', 'put', { external: null }, 'external'],
      ['/schedules', 'post', { name: 'n', cron: '* * * * *', type: 'diag.echo', queue: null }, 'queue'],
      ['/schedules', 'post', { name: 'n', cron: '* * * * *', type: 'diag.echo', timezone: null }, 'timezone'],
      ['/queues/nq/claim', 'post', { workerId: 'w', max: null }, 'max'],
      [`/jobs/${UUID}/fail`, 'post', { lockToken: 't', error: { message: 'm', stack: null } }, 'error.stack'],
      ['/jobs/dlq/retry', 'post', { queue: null }, 'queue'],
    ])('%s (%s) with %j → 400 naming %s', async (path, method, body, field) => {
      const res = await api.http[method as 'post'](path).send(body);
      expectEnvelope(res, 400, 'validation_failed');
      expect(res.body.error.details).toContainEqual({ path: field, message: 'must not be null' });
    });

    it('null stays accepted where the contract documents it', async () => {
      const q = await api.http.put('/queues/nq').send({ maxConcurrency: null, rateLimit: null });
      expect(q.status).toBe(200);
      const s = await api.http.post('/schedules').send({ name: 'nullable', cron: '0 3 * * *', type: 'diag.echo', maxAttempts: null, backoff: null, timeoutMs: null });
      expect(s.status).toBe(201);
      // `result: null` is a result: the 409 is about the lease, not the null.
      const c = await api.http.post(`/jobs/${UUID}/complete`).send({ lockToken: 't', result: null });
      expect(c.status).not.toBe(400);
    });
  });

  describe('errors of the router and the HTTP layer', () => {
    it('unknown route → 404 envelope', async () => {
      expectEnvelope(await api.http.get('/no/such/route'), 404, 'not_found');
    });

    it('malformed percent-encoding → 400 envelope; the client X-Request-Id is echoed', async () => {
      const res = await api.http.get('/jobs/%E0%A4%A').set('X-Request-Id', 'bad-url-1');
      expectEnvelope(res, 400, 'validation_failed');
      expect(res.body.error.requestId).toBe('bad-url-1');
    });

    it('a path segment over 256 characters (after percent-decoding) → 414 envelope; at 256, the route answers', async () => {
      const res = await api.http.get(`/jobs/${'a'.repeat(257)}`);
      expectEnvelope(res, 414, 'uri_too_long');
      expect((await api.http.get(`/jobs/${'a'.repeat(256)}`)).status).toBe(404);
      // Counted decoded: 256 three-byte characters (2304 as sent) reach the route (a key over 128: 400 naming it); 257 do not.
      const key = await api.http.delete(`/queues/never-made/keys/${encodeURIComponent('€'.repeat(256))}`);
      expect([key.status, key.body.error.details]).toEqual([400, [{ path: 'key', message: expect.any(String) }]]);
      expectEnvelope(await api.http.delete(`/queues/never-made/keys/${encodeURIComponent('€'.repeat(257))}`), 414, 'uri_too_long');
    });

    it('headers over 16 KiB → 431 envelope (raw socket)', async () => {
      const res = parseRaw(await rawExchange(port, `GET /healthz HTTP/1.1\r\n${HOST}\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`));
      expectEnvelope(res, 431, 'headers_too_large');
    });

    it.each([
      ['a garbage request line', 'GARBAGE\r\n\r\n'],
      ['a bad HTTP version', `GET / HTTP/9.9\r\n${HOST}\r\n\r\n`],
      ['a header without a colon', 'GET /healthz HTTP/1.1\r\nHost x\r\n\r\n'],
      ['a bad chunk size', `POST /jobs HTTP/1.1\r\n${HOST}\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n`],
    ])("Node's own 400 for %s → envelope with X-Request-Id (raw socket)", async (_name, text) => {
      const res = parseRaw(await rawExchange(port, text));
      expectEnvelope(res, 400, 'validation_failed');
    });

    it('the same raw requests, well formed, are served (the 400s above are the parser\'s)', async () => {
      expect(parseRaw(await rawExchange(port, `GET /healthz HTTP/1.1\r\n${HOST}\r\nConnection: close\r\n\r\n`)).status).toBe(200);
      const chunked = `POST /jobs HTTP/1.1\r\n${HOST}\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n14\r\n{"type":"diag.echo"}\r\n0\r\n\r\n`;
      expect(parseRaw(await rawExchange(port, chunked)).status).toBe(201);
    });

    it('a body without a content type, or with another one → 415 unsupported_media_type', async () => {
      const raw = (type: string) => `POST /jobs HTTP/1.1\r\n${HOST}\r\n${type}Content-Length: 20\r\nConnection: close\r\n\r\n{"type":"diag.echo"}`;
      expectEnvelope(parseRaw(await rawExchange(port, raw(''))), 415, 'unsupported_media_type');
      expect(parseRaw(await rawExchange(port, raw('Content-Type: application/json\r\n'))).status).toBe(201);
      for (const type of ['text/plain', 'application/x-www-form-urlencoded', 'multipart/form-data; boundary=x']) {
        expectEnvelope(await api.http.post('/jobs').set('Content-Type', type).send('type=diag.echo'), 415, 'unsupported_media_type');
      }
      // No body: no content type needed, whatever it says.
      expect((await api.http.post('/queues/ct/pause').set('Content-Type', 'text/plain')).status).toBe(200);
      expect((await api.http.post('/queues/ct/resume')).status).toBe(200);
    });
  });
});
