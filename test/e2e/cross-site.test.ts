import { startTestApi, type TestApi } from '../support/http';
import { crossSiteRefusal } from '../../src/auth/cross-site';
import { loadConfig } from '../../src/config/config';

/**
 * API.md v1.1 cross-site rules, whatever AUTH is: a foreign Origin never
 * acts, a body that is not JSON is 415, and with AUTH=off a foreign Host
 * (DNS rebinding) is refused. Security headers on HTML responses.
 */
let api: TestApi;
let host: string;
beforeAll(async () => {
  api = await startTestApi('crosssite', { CORS_ORIGINS: 'https://console.example.com' });
  host = new URL(api.url).host;
});
afterAll(() => api?.close());

async function paused(q: string): Promise<boolean | null> {
  const r = await api.http.get(`/queues/${q}`);
  return r.status === 200 ? r.body.paused : null;
}

test('a state-changing request from a foreign Origin → 403, and nothing changes', async () => {
  for (const origin of ['http://evil.example', 'null', `http://${host}.evil.example`, 'https://console.example.com.evil']) {
    const r = await api.http.post('/queues/xsite/pause').set('origin', origin);
    expect(r.status).toBe(403);
    expect(r.body.error.code).toBe('forbidden');
    expect(r.headers['x-request-id']).toBeTruthy();
  }
  expect(await paused('xsite')).toBeNull(); // never created, never paused
  const del = await api.http.delete('/jobs/dlq').set('origin', 'http://evil.example');
  expect(del.status).toBe(403);
  const retry = await api.http.post('/jobs/dlq/retry').set('origin', 'http://evil.example').send({});
  expect(retry.status).toBe(403);
});

test('the same origin, a CORS_ORIGINS entry, or no Origin at all may act; GETs are not refused by Origin', async () => {
  expect((await api.http.post('/queues/xsite2/pause').set('origin', `http://${host}`)).status).toBe(200);
  expect((await api.http.post('/queues/xsite2/resume').set('origin', 'https://console.example.com')).status).toBe(200);
  expect((await api.http.post('/queues/xsite2/pause')).status).toBe(200);
  expect((await api.http.get('/queues').set('origin', 'http://evil.example')).status).toBe(200);
});

test('a body with another content type than JSON → 415 unsupported_media_type, and nothing changes', async () => {
  for (const type of ['text/plain', 'application/x-www-form-urlencoded', 'multipart/form-data; boundary=x']) {
    const r = await api.http.post('/queues/xsite3/pause').set('content-type', type).send('a=1');
    expect(r.status).toBe(415);
    expect(r.body.error.code).toBe('unsupported_media_type');
  }
  expect(await paused('xsite3')).toBeNull();
});

test('AUTH=off: a foreign Host is refused (DNS rebinding); loopback names and ALLOWED_HOSTS pass', async () => {
  const r = await api.http.get('/queues').set('host', `rebind.evil.example:${new URL(api.url).port}`);
  expect(r.status).toBe(403);
  expect(r.body.error.code).toBe('forbidden');
  for (const h of [`localhost:${new URL(api.url).port}`, host, `[::1]:${new URL(api.url).port}`]) {
    expect((await api.http.get('/queues').set('host', h)).status).toBe(200);
  }
  const cfg = loadConfig({ ALLOWED_HOSTS: 'sluice.internal', HOST: '127.0.0.1' });
  expect(crossSiteRefusal(cfg, 'GET', { host: 'sluice.internal:3000' })).toBeNull();
  expect(crossSiteRefusal(cfg, 'GET', { host: 'other.internal:3000' })).not.toBeNull();
  // With AUTH=on the Host is not the defence (credentials are): not refused.
  expect(crossSiteRefusal({ ...cfg, auth: true }, 'GET', { host: 'other.internal:3000' })).toBeNull();
});

test('HTML responses carry CSP, frame-ancestors none, nosniff and Referrer-Policy; inline code only by hash', async () => {
  for (const path of ['/ui/', '/docs']) {
    const r = await api.http.get(path).redirects(1);
    expect(r.status).toBe(200);
    const csp = r.headers['content-security-policy'];
    expect(csp).toContain("frame-ancestors 'none'");
    expect(csp).not.toContain('unsafe-inline');
    expect(r.headers['x-content-type-options']).toBe('nosniff');
    expect(r.headers['referrer-policy']).toBe('no-referrer');
    expect(r.headers['x-frame-options']).toBe('DENY');
  }
  expect((await api.http.get('/queues')).headers['x-content-type-options']).toBe('nosniff');
});

test('AUTH defaults: off on a loopback HOST, on elsewhere; an explicit value wins', () => {
  expect(loadConfig({}).auth).toBe(false);
  expect(loadConfig({ HOST: 'localhost' }).auth).toBe(false);
  expect(loadConfig({ HOST: '::1' }).auth).toBe(false);
  expect(loadConfig({ HOST: '0.0.0.0' }).auth).toBe(true);
  expect(loadConfig({ HOST: '10.1.2.3' }).auth).toBe(true);
  expect(loadConfig({ HOST: '0.0.0.0', AUTH: 'off' }).auth).toBe(false);
  expect(loadConfig({ AUTH: 'on' }).auth).toBe(true);
  expect(() => loadConfig({ AUTH: 'yes' })).toThrow(/AUTH/);
  expect(() => loadConfig({ SLUICE_BOOTSTRAP_ADMIN_KEY: 'short' })).toThrow(/SLUICE_BOOTSTRAP_ADMIN_KEY/);
  expect(() => loadConfig({ SLUICE_BOOTSTRAP_ADMIN_KEY: 'sk_tooshort-but-secret' })).not.toThrow(/tooshort/);
});
