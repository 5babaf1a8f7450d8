import { UnrecoverableError } from '../../../core/handler';
import type { Json } from '../../../core/job';
import { DEFAULT_TIMEOUT_MS, MAX_BODY_BYTES, MAX_TIMEOUT_MS, parseHttpRequestPayload } from './payload';

const refused = (p: Record<string, Json>) => {
  try {
    parseHttpRequestPayload(p);
  } catch (e) {
    expect(e).toBeInstanceOf(UnrecoverableError);
    return (e as Error).message;
  }
  throw new Error(`accepted ${JSON.stringify(p).slice(0, 200)}`);
};
const url = 'https://hooks.example.com/x?y=1#frag';

describe('http.request payload', () => {
  it('accepts a full payload: method upper-cased, header names lower-cased, fragment dropped', () => {
    const s = parseHttpRequestPayload({ method: 'post', url, headers: { 'X-Sig': 'abc', Authorization: 'Bearer t' }, body: { a: 1 }, timeoutMs: 2500 });
    expect(s.method).toBe('POST');
    expect(s.url.href).toBe('https://hooks.example.com/x?y=1');
    expect(s.headers).toEqual({ 'x-sig': 'abc', authorization: 'Bearer t', 'content-type': 'application/json' });
    expect(s.body?.toString()).toBe('{"a":1}');
    expect(s.timeoutMs).toBe(2500);
  });

  it('defaults: no headers, no body, timeout 10 s; a string body is text unless typed', () => {
    const s = parseHttpRequestPayload({ method: 'GET', url });
    expect(s).toMatchObject({ headers: {}, body: null, timeoutMs: DEFAULT_TIMEOUT_MS });
    expect(parseHttpRequestPayload({ method: 'PUT', url, body: 'hi' }).headers['content-type']).toBe('text/plain; charset=utf-8');
    expect(parseHttpRequestPayload({ method: 'PUT', url, body: 'hi', headers: { 'Content-Type': 'text/csv' } }).headers['content-type']).toBe('text/csv');
    expect(parseHttpRequestPayload({ method: 'PATCH', url, body: false }).body?.toString()).toBe('false');
  });

  it.each([
    [{ url }, 'payload.method must be one of GET, HEAD, POST, PUT, PATCH, DELETE, OPTIONS'],
    [{ method: 'CONNECT', url }, 'payload.method must be one of'],
    [{ method: 'TRACE', url }, 'payload.method must be one of'],
    [{ method: 'GET' }, 'payload.url must be a string'],
    [{ method: 'GET', url: '' }, 'payload.url must be a string'],
    [{ method: 'GET', url: `https://a.example/${'x'.repeat(9000)}` }, 'payload.url must be a string of 1..8192'],
    [{ method: 'GET', url: '/relative' }, 'payload.url is not a valid absolute URL'],
    [{ method: 'GET', url: 'ftp://a.example/' }, 'payload.url must use http or https'],
    [{ method: 'GET', url: 'file:///etc/passwd' }, 'payload.url must use http or https'],
    [{ method: 'GET', url: 'gopher://a.example/' }, 'payload.url must use http or https'],
    [{ method: 'GET', url: 'https://user:pass@a.example/' }, 'payload.url must not carry credentials'],
    [{ method: 'GET', url, headers: ['x'] }, 'payload.headers must be an object'],
    [{ method: 'GET', url, headers: 'x' }, 'payload.headers must be an object'],
    [{ method: 'GET', url, headers: { 'bad name': 'x' } }, 'is not a valid header name'],
    [{ method: 'GET', url, headers: { 'x:y': 'x' } }, 'is not a valid header name'],
    [{ method: 'GET', url, headers: { Host: 'internal' } }, 'host is set by the handler'],
    [{ method: 'GET', url, headers: { 'Transfer-Encoding': 'chunked' } }, 'transfer-encoding is set by the handler'],
    [{ method: 'GET', url, headers: { 'content-length': '5' } }, 'content-length is set by the handler'],
    [{ method: 'GET', url, headers: { Connection: 'keep-alive' } }, 'connection is set by the handler'],
    [{ method: 'GET', url, headers: { 'X-A': '1', 'x-a': '2' } }, 'x-a given twice'],
    [{ method: 'GET', url, headers: { 'x-a': 1 } }, 'payload.headers.x-a must be a string'],
    [{ method: 'GET', url, headers: { 'x-a': 'a\r\nInjected: 1' } }, 'payload.headers.x-a must be at most'],
    [{ method: 'GET', url, headers: { 'x-a': 'nul\u0000' } }, 'payload.headers.x-a must be at most'],
    [{ method: 'GET', url, headers: { 'x-a': 'snow ☃' } }, 'payload.headers.x-a must be at most'],
    [{ method: 'GET', url, headers: { 'x-a': 'v'.repeat(8193) } }, 'payload.headers.x-a must be at most 8192'],
    [{ method: 'GET', url, headers: Object.fromEntries(Array.from({ length: 65 }, (_, i) => [`x-${i}`, 'v'])) }, 'more than 64 headers'],
    [{ method: 'GET', url, headers: Object.fromEntries(Array.from({ length: 8 }, (_, i) => [`x-${i}`, 'v'.repeat(8000)])) }, 'exceed 32768 bytes'],
    [{ method: 'GET', url, body: 'x' }, 'payload.body is not allowed with GET'],
    [{ method: 'HEAD', url, body: {} }, 'payload.body is not allowed with HEAD'],
    [{ method: 'POST', url, body: 'é'.repeat(MAX_BODY_BYTES / 2 + 1) }, `payload.body exceeds ${MAX_BODY_BYTES} bytes`],
    [{ method: 'GET', url, timeoutMs: 0 }, `payload.timeoutMs must be an integer 1..${MAX_TIMEOUT_MS}`],
    [{ method: 'GET', url, timeoutMs: MAX_TIMEOUT_MS + 1 }, 'payload.timeoutMs must be an integer'],
    [{ method: 'GET', url, timeoutMs: 1.5 }, 'payload.timeoutMs must be an integer'],
    [{ method: 'GET', url, timeoutMs: '100' }, 'payload.timeoutMs must be an integer'],
    [{ method: 'GET', url, extra: 1 }, 'unknown payload field "extra"'],
  ] as [Record<string, Json>, string][])('refuses %j', (p, message) => {
    expect(refused(p)).toContain(message);
  });

  it('never echoes a header value or the body in its messages', () => {
    const secret = 'sk_live_SECRET';
    expect(refused({ method: 'GET', url, headers: { authorization: `${secret}\n` } })).not.toContain(secret);
    expect(refused({ method: 'GET', url, body: secret })).not.toContain(secret);
  });
});
