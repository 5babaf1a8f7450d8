/// <reference lib="dom" />
import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { launchChromium } from '../support/chromium';
import { startTestApi, type TestApi } from '../support/http';
import { sleep } from '../support/redis';

/**
 * The operator console end to end: real Chromium, a real server (ROLE=all,
 * AUTH=on) on real Redis and PostgreSQL, the console as `npm run build` makes it.
 * Each view's main flow, a job's timeline equal to /jobs/:id/events, pause with
 * confirmation, a viewer without destructive controls, stored markup inert,
 * axe-core without serious/critical violations, 390 px without sideways scrolling.
 * Screenshots of each view go to docs/screenshots/ (shown in the README).
 */
const ROOT = join(__dirname, '..', '..');
const SHOTS = join(ROOT, 'docs', 'screenshots');
const BOOTSTRAP = 'sk_' + randomBytes(32).toString('base64url');
const ROOT_KEY = `Bearer ${BOOTSTRAP}`;
const EVIL = '<script>window.__pwned=1</script><img src=x onerror="window.__pwned=2">';
const PASSWORD = 'correct horse battery';

let api: TestApi;
let browser: Browser;
let failedJob: string;
let externalJob: string;

async function until<T>(f: () => Promise<T | undefined | null | false>, ms = 20_000): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const v = await f();
    if (v) return v;
    if (Date.now() > end) throw new Error('timed out');
    await sleep(100);
  }
}

beforeAll(async () => {
  // The console as the README's build makes it (built here too when a test run skipped `npm run build`).
  if (!existsSync(join(ROOT, 'dist', 'console', 'index.html'))) execFileSync(join(ROOT, 'node_modules', '.bin', 'vite'), ['build', '--config', 'src/dashboard/console/vite.config.ts'], { cwd: ROOT, stdio: 'ignore' });
  mkdirSync(SHOTS, { recursive: true });
  api = await startTestApi('console', { ROLE: 'all', AUTH: 'on', SLUICE_BOOTSTRAP_ADMIN_KEY: BOOTSTRAP, WORKER_CONCURRENCY: '4' });
  const as = (r: ReturnType<TestApi['http']['post']>) => r.set('authorization', ROOT_KEY);
  for (const [username, role] of [['ops@example.com', 'admin'], ['viewer@example.com', 'viewer']]) {
    expect((await as(api.http.post('/users')).send({ username, password: PASSWORD, role })).status).toBe(201);
  }
  // A failed job whose payload and error carry markup; some completed ones; an external job with log lines.
  expect((await as(api.http.put('/queues/mail')).send({ maxConcurrency: 4 })).status).toBe(200);
  for (let i = 0; i < 5; i++) await as(api.http.post('/jobs')).send({ queue: 'mail', type: 'diag.echo', payload: { n: i } });
  const f = await as(api.http.post('/jobs')).send({ queue: 'mail', type: 'diag.fail', payload: { message: `smtp refused ${EVIL}`, html: EVIL }, maxAttempts: 1 });
  failedJob = f.body.id;
  await until(async () => (await as(api.http.get(`/jobs/${failedJob}`))).body.status === 'failed');
  expect((await as(api.http.put('/queues/ext')).send({ external: true })).status).toBe(200);
  externalJob = (await as(api.http.post('/jobs')).send({ queue: 'ext', type: 'render', payload: { title: EVIL }, maxAttempts: 1 })).body.id;
  const workerKey = (await as(api.http.post('/keys')).send({ name: 'w', role: 'worker' })).body.secret;
  const w = (r: ReturnType<TestApi['http']['post']>) => r.set('authorization', `Bearer ${workerKey}`);
  const claimed = (await w(api.http.post('/queues/ext/claim')).send({ workerId: 'ext-1', max: 1 })).body.jobs[0];
  await w(api.http.post(`/jobs/${externalJob}/heartbeat`)).send({ lockToken: claimed.lockToken, logs: [`rendering ${EVIL}`], progress: 40 });
  await w(api.http.post(`/jobs/${externalJob}/fail`)).send({ lockToken: claimed.lockToken, error: { message: `template broke ${EVIL}`, stack: `Error: ${EVIL}\n    at render` }, retryable: false });
  await as(api.http.post('/schedules')).send({ name: 'nightly-report', cron: '0 2 * * *', timezone: 'Europe/Paris', queue: 'mail', type: 'diag.echo', payload: {} });
  browser = await launchChromium();
}, 120_000);

afterAll(async () => {
  await browser?.close();
  await api?.close();
});

async function loggedIn(username: string, width = 1280): Promise<{ ctx: BrowserContext; page: Page }> {
  const ctx = await browser.newContext({ viewport: { width, height: 900 }, colorScheme: 'light' });
  const page = await ctx.newPage();
  page.on('pageerror', (e) => {
    throw e;
  });
  await page.goto(`${api.url}/ui/`);
  await page.waitForURL(/\/ui\/login$/);
  await page.getByLabel('Username').fill(username);
  await page.getByLabel('Password').fill(PASSWORD);
  await page.getByRole('button', { name: 'Log in' }).click();
  await page.getByRole('heading', { name: 'Overview' }).waitFor();
  return { ctx, page };
}

const AXE = readFileSync(require.resolve('axe-core/axe.min.js'), 'utf8');

/** axe-core in the page (injected through the CDP, so the page's CSP does not apply): serious or critical violations. */
async function axeViolations(page: Page): Promise<string[]> {
  await page.evaluate(AXE);
  const r = await page.evaluate(async () => (window as unknown as { axe: { run: (c: unknown) => Promise<{ violations: { id: string; impact: string; nodes: { target: string[] }[] }[] }> } }).axe.run(document));
  return r.violations.filter((v) => v.impact === 'serious' || v.impact === 'critical').map((v) => `${v.id}: ${v.nodes.map((n) => n.target.join(' ')).slice(0, 3).join(', ')}`);
}

const noSideways = (page: Page) => page.evaluate(() => document.documentElement.scrollWidth <= window.innerWidth);

test('overview: queues with counts, tiles, needs attention; screenshot, axe, 390 px', async () => {
  const { ctx, page } = await loggedIn('ops@example.com');
  await page.getByRole('link', { name: 'mail' }).first().waitFor();
  await page.getByText('Workers alive').waitFor();
  expect(await page.locator('.table-wrap[aria-label="Queues"]').textContent()).toContain('mail');
  await page.screenshot({ path: join(SHOTS, 'overview.png'), fullPage: true });
  expect(await axeViolations(page)).toEqual([]);
  await page.setViewportSize({ width: 390, height: 844 });
  await sleep(200);
  expect(await noSideways(page)).toBe(true);
  await page.screenshot({ path: join(SHOTS, 'overview-390.png'), fullPage: true });
  // Dark mode: the toggle, and axe again (contrast).
  await page.getByRole('button', { name: 'Dark mode' }).click();
  expect(await page.evaluate(() => document.documentElement.dataset.theme)).toBe('dark');
  expect(await axeViolations(page)).toEqual([]);
  await page.screenshot({ path: join(SHOTS, 'overview-dark-390.png'), fullPage: true });
  await ctx.close();
});

test('job detail: timeline equals /jobs/:id/events; payload, error, stack and logs with markup stay inert', async () => {
  const { ctx, page } = await loggedIn('ops@example.com');
  const events = (await api.http.get(`/jobs/${externalJob}/events`).set('authorization', ROOT_KEY)).body.items as { seq: number; event: string }[];
  expect(events.length).toBeGreaterThanOrEqual(3);
  await page.goto(`${api.url}/ui/jobs/${externalJob}`);
  await page.getByLabel('Log lines').waitFor();
  await page.locator('.timeline li').nth(events.length - 1).waitFor();
  const shown = await page.locator('.timeline li').evaluateAll((lis) => lis.map((li) => ({ seq: Number(li.getAttribute('data-seq')), event: li.getAttribute('data-event') })));
  expect(shown).toEqual(events.map((e) => ({ seq: e.seq, event: e.event })));
  expect(await page.getByLabel('Log lines').textContent()).toContain(`rendering ${EVIL}`);
  expect(await page.locator('main').textContent()).toContain(`template broke ${EVIL}`);
  expect(await page.locator('main img, main script').count()).toBe(0);
  expect(await page.evaluate(() => (window as unknown as { __pwned?: number }).__pwned)).toBeUndefined();
  await page.screenshot({ path: join(SHOTS, 'job.png'), fullPage: true });
  expect(await axeViolations(page)).toEqual([]);
  // Retry with an edited payload, through the JSON editor.
  await page.getByRole('button', { name: 'Retry with edited payload' }).click();
  await page.getByLabel('Payload for the retry').fill('{"title": "fixed"}');
  await page.getByRole('button', { name: 'Retry with this payload' }).click();
  await page.getByText('Retried: now waiting').waitFor();
  expect((await api.http.get(`/jobs/${externalJob}`).set('authorization', ROOT_KEY)).body.payload).toEqual({ title: 'fixed' });
  await page.setViewportSize({ width: 390, height: 844 });
  await sleep(200);
  expect(await noSideways(page)).toBe(true);
  await ctx.close();
});

test('queue: pause asks for confirmation, then the queue is paused', async () => {
  const { ctx, page } = await loggedIn('ops@example.com');
  await page.goto(`${api.url}/ui/queues/mail`);
  await page.getByRole('button', { name: 'Pause queue' }).click();
  const dialog = page.getByRole('alertdialog');
  await dialog.waitFor();
  await page.screenshot({ path: join(SHOTS, 'queue-pause-confirm.png') });
  await dialog.getByRole('button', { name: 'Cancel' }).click();
  expect((await api.http.get('/queues/mail').set('authorization', ROOT_KEY)).body.paused).toBe(false);
  await page.getByRole('button', { name: 'Pause queue' }).click();
  await page.getByRole('alertdialog').getByRole('button', { name: 'Pause queue' }).click();
  await page.getByRole('button', { name: 'Resume queue' }).waitFor();
  expect((await api.http.get('/queues/mail').set('authorization', ROOT_KEY)).body.paused).toBe(true);
  await page.getByRole('tab', { name: /completed/ }).click();
  await page.getByRole('region', { name: 'completed jobs of mail' }).getByRole('link').first().waitFor();
  await page.screenshot({ path: join(SHOTS, 'queue.png'), fullPage: true });
  expect(await axeViolations(page)).toEqual([]);
  await page.setViewportSize({ width: 390, height: 844 });
  await sleep(200);
  expect(await noSideways(page)).toBe(true);
  await ctx.close();
});

test('explorer, workers, schedules: main flow of each, screenshots, axe, 390 px', async () => {
  const { ctx, page } = await loggedIn('ops@example.com');
  await page.goto(`${api.url}/ui/jobs?queue=mail&status=completed`);
  await page.getByRole('region', { name: 'Jobs' }).getByRole('link').first().waitFor();
  expect(await page.getByRole('region', { name: 'Jobs' }).getByRole('link').count()).toBe(5);
  await page.screenshot({ path: join(SHOTS, 'jobs.png'), fullPage: true });
  expect(await axeViolations(page)).toEqual([]);

  await page.goto(`${api.url}/ui/workers`);
  await page.getByText('running').first().waitFor();
  await page.screenshot({ path: join(SHOTS, 'workers.png'), fullPage: true });
  expect(await axeViolations(page)).toEqual([]);

  await page.goto(`${api.url}/ui/schedules`);
  await page.getByText('nightly-report').waitFor();
  await page.getByRole('button', { name: 'New schedule' }).click();
  await page.getByLabel('Name').fill('every-five');
  await page.getByLabel('Cron (5 or 6 fields)').fill('*/5 * * * *');
  await page.getByText('Every 5 minutes').waitFor();
  await page.getByText(/Next runs:/).waitFor();
  await page.getByLabel('Job type').fill('diag.echo');
  await page.screenshot({ path: join(SHOTS, 'schedules-new.png'), fullPage: true });
  await page.getByRole('button', { name: 'Create schedule' }).click();
  await page.getByText('every-five').waitFor();
  const list = (await api.http.get('/schedules').set('authorization', ROOT_KEY)).body as { name: string }[];
  expect(list.map((s) => s.name).sort()).toEqual(['every-five', 'nightly-report']);
  await page.screenshot({ path: join(SHOTS, 'schedules.png'), fullPage: true });
  expect(await axeViolations(page)).toEqual([]);
  for (const path of ['/ui/jobs', '/ui/workers', '/ui/schedules']) {
    await page.setViewportSize({ width: 390, height: 844 });
    await page.goto(`${api.url}${path}`);
    await page.locator('h1').waitFor();
    await sleep(300);
    expect([path, await noSideways(page)]).toEqual([path, true]);
  }
  await ctx.close();
});

test('DLQ view: failed jobs by cause; purge asks first (groups need GET /jobs/dlq/groups)', async () => {
  const groups = await api.http.get('/jobs/dlq/groups').set('authorization', ROOT_KEY);
  const { ctx, page } = await loggedIn('ops@example.com');
  await page.goto(`${api.url}/ui/dlq`);
  if (groups.status === 404) {
    // Not merged on this branch: the view says so instead of pretending the DLQ is empty.
    await page.getByText(/Could not load dead-letter groups: 404/).waitFor();
  } else {
    await page.getByText('smtp refused', { exact: false }).first().waitFor();
    await page.getByRole('button', { name: 'Show jobs' }).first().click();
    await page.getByRole('link', { name: failedJob.slice(-12) }).waitFor();
    expect(await page.locator('main img, main script').count()).toBe(0);
  }
  await page.screenshot({ path: join(SHOTS, 'dlq.png'), fullPage: true });
  await page.getByRole('button', { name: 'Purge whole DLQ' }).click();
  await page.getByRole('alertdialog').getByRole('button', { name: 'Cancel' }).click();
  expect((await api.http.get(`/jobs/${failedJob}`).set('authorization', ROOT_KEY)).body.status).toBe('failed');
  expect(await axeViolations(page)).toEqual([]);
  await ctx.close();
});

test('a viewer sees no destructive control on any view', async () => {
  const { ctx, page } = await loggedIn('viewer@example.com');
  const DESTRUCTIVE = /pause|resume|cancel|retry|purge|delete|disable|enable|save|new schedule|clone/i;
  for (const path of ['/ui/', '/ui/queues/mail', `/ui/jobs/${failedJob}`, '/ui/jobs?queue=mail', '/ui/dlq', '/ui/workers', '/ui/schedules']) {
    await page.goto(`${api.url}${path}`);
    await page.locator('h1').waitFor();
    await sleep(500);
    const buttons = await page.getByRole('button').allTextContents();
    expect([path, buttons.filter((b) => DESTRUCTIVE.test(b))]).toEqual([path, []]);
    // No selection for bulk actions; the settings form is read-only.
    expect(await page.locator('input[type=checkbox]:not([disabled])').count()).toBe(0);
  }
  expect(await page.getByRole('banner').textContent()).toContain('viewer@example.com (viewer)');
  await page.getByRole('button', { name: 'Log out' }).click();
  await page.waitForURL(/\/ui\/login$/);
  await page.screenshot({ path: join(SHOTS, 'login.png') });
  expect(await axeViolations(page)).toEqual([]);
  await ctx.close();
});
