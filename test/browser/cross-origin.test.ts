/// <reference lib="dom" />
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Browser } from 'playwright-core';
import { launchChromium } from '../support/chromium';
import { startTestApi, type TestApi } from '../support/http';
import { sleep } from '../support/redis';

/**
 * The reproduction of the security issue, in real Chromium: a page on
 * another origin fires `fetch(..., {method: 'POST', mode: 'no-cors'})` at
 * Sluice to pause a queue and re-run the DLQ. Both must be refused, and the
 * queue must not be paused, whatever AUTH is (here off: the local default).
 */
let api: TestApi;
let evil: Server;
let evilUrl: string;
let browser: Browser;

beforeAll(async () => {
  api = await startTestApi('xorigin');
  // "Another origin": another port of this machine (same host, different origin).
  evil = createServer((_req, res) => {
    res.setHeader('content-type', 'text/html');
    res.end('<!doctype html><title>evil</title><p>hello');
  });
  await new Promise<void>((r) => evil.listen(0, '127.0.0.1', r));
  evilUrl = `http://127.0.0.1:${(evil.address() as AddressInfo).port}`;
  browser = await launchChromium();
});
afterAll(async () => {
  await browser?.close();
  await new Promise((r) => evil?.close(r));
  await api?.close();
});

test('a cross-origin no-cors POST cannot pause a queue or retry the DLQ', async () => {
  expect((await api.http.put('/queues/victim').send({ maxConcurrency: 5 })).status).toBe(200);
  const page = await browser.newPage();
  const sluice = api.url;
  const seen: { url: string; status: number }[] = [];
  page.on('response', (r) => seen.push({ url: r.url(), status: r.status() }));
  await page.goto(evilUrl);
  await page.evaluate(async (s) => {
    const opts = (body?: string, type?: string): RequestInit => ({ method: 'POST', mode: 'no-cors', body, headers: type ? { 'content-type': type } : undefined });
    await fetch(`${s}/queues/victim/pause`, opts()).catch(() => undefined);
    await fetch(`${s}/queues/victim/pause`, opts('{}', 'text/plain')).catch(() => undefined);
    await fetch(`${s}/jobs/dlq/retry`, opts('{}', 'text/plain')).catch(() => undefined);
    // A form post, the other classic cross-site write.
    const f = document.createElement('form');
    f.method = 'POST';
    f.action = `${s}/queues/victim/pause`;
    document.body.appendChild(f);
  }, sluice);
  await sleep(300);
  await page.evaluate(() => (document.querySelector('form') as HTMLFormElement).submit());
  await page.waitForLoadState('load').catch(() => undefined);
  await sleep(300);
  const q = await api.http.get('/queues/victim');
  expect(q.body.paused).toBe(false);
  const toSluice = seen.filter((r) => r.url.startsWith(sluice));
  expect(toSluice.length).toBeGreaterThanOrEqual(1);
  for (const r of toSluice) expect([403, 415]).toContain(r.status);
  await page.close();
});

test('the same request from the server\'s own origin works (the rule is not a blanket refusal)', async () => {
  const page = await browser.newPage();
  await page.goto(`${api.url}/healthz`);
  const status = await page.evaluate(async () => (await fetch('/queues/own/pause', { method: 'POST' })).status);
  expect(status).toBe(200);
  expect((await api.http.get('/queues/own')).body.paused).toBe(true);
  await page.close();
});
