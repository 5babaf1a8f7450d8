/// <reference lib="dom" />
import { randomBytes } from 'node:crypto';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { launchChromium } from '../support/chromium';
import { axeViolations, ensureConsoleBuilt, logIn, until } from '../support/console-browser';
import { startTestApi, type TestApi } from '../support/http';
import { sleep } from '../support/redis';

/**
 * The operator console end to end: real Chromium, a real server (ROLE=all,
 * AUTH=on) on real Redis and PostgreSQL, the console as `npm run build` makes it.
 * Each view's main flow, a job's timeline equal to /jobs/:id/events, pause with
 * confirmation, a viewer without destructive controls, stored markup inert,
 * axe-core without serious/critical violations, 390 px without sideways scrolling.
 * Screenshots of each view go to docs/screenshots/ (shown in docs/console.md).
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


beforeAll(async () => {
  // The console as `npm run build` makes it (built here too when a test run skipped `npm run build`).
  ensureConsoleBuilt(ROOT);
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

const loggedIn = (username: string, width = 1280) => logIn(browser, api.url, username, PASSWORD, width);

const noSideways = (page: Page) => page.evaluate(() => document.documentElement.scrollWidth <= window.innerWidth);

test('overview: queues with counts, tiles, needs attention; screenshot, axe, 390 px', async () => {
  const { ctx, page } = await loggedIn('ops@example.com');
  await page.getByRole('link', { name: 'mail' }).first().waitFor();
  await page.getByText('Workers alive').waitFor();
  expect(await page.locator('.table-wrap[aria-label="Queues"]').textContent()).toContain('mail');
  // Charts from GET /dashboard/metrics: the 5 echo jobs completed within the hour (and so within 24 h and 7 d), the failed ones too.
  for (const range of ['1h', '24h', '7d']) {
    await page.getByRole('group', { name: 'Chart range' }).getByRole('button', { name: range, exact: true }).click();
    await until(async () => {
      const m = /Last (\w+): (\d+) completed, (\d+) failed/.exec((await page.locator('main').textContent()) ?? '');
      return m !== null && m[1] === range && Number(m[2]) >= 5 && Number(m[3]) >= 1;
    });
    await page.locator('.chart svg .recharts-bar-rectangle').first().waitFor();
  }
  await page.getByRole('group', { name: 'Chart range' }).getByRole('button', { name: '1h', exact: true }).click();
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
  const DESTRUCTIVE = /pause|resume|cancel|retry|purge|delete|disable|enable|save|new schedule|clone|override/i;
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

/** The rows of the queue view's keys table, as their cells' text (the actions column left out). */
async function keyRows(page: Page, queue: string): Promise<string[][]> {
  return page
    .getByRole('region', { name: `Busiest keys of ${queue}` })
    .locator('tbody tr')
    .evaluateAll((trs) => trs.map((tr) => Array.from(tr.querySelectorAll('td')).slice(0, 6).map((td) => td.textContent ?? '')));
}

test('keys: keyed jobs listed busiest first; an operator sets a key\'s override (also in GET /queues/:name/keys), edits the per-key settings, removes it; a viewer only reads', async () => {
  const as = (r: ReturnType<TestApi['http']['post']>) => r.set('authorization', ROOT_KEY);
  // An external queue: nothing claims its jobs here, so the counts hold still. A key with a slash and a space travels as one encoded segment.
  const SLASHED = 'tenant/eu 1';
  expect((await as(api.http.put('/queues/tenants')).send({ external: true, keyConcurrency: 2 })).status).toBe(200);
  const keyed: Record<string, string> = {};
  for (const [key, n] of [['acme', 5], ['globex', 2], [SLASHED, 1]] as const) {
    for (let i = 0; i < n; i++) keyed[key] = (await as(api.http.post('/jobs')).send({ queue: 'tenants', type: 'render', payload: { i }, concurrencyKey: key })).body.id;
  }
  const keysOf = async () => (await as(api.http.get('/queues/tenants/keys'))).body.items as { key: string; waiting: number; overrides: unknown; limits: unknown }[];
  await until(async () => (await keysOf()).find((k) => k.key === 'acme')?.waiting === 5);

  const { ctx, page } = await loggedIn('ops@example.com');
  await page.goto(`${api.url}/ui/queues/tenants`);
  const table = page.getByRole('region', { name: 'Busiest keys of tenants' });
  await table.getByText('acme', { exact: true }).waitFor();
  expect(await keyRows(page, 'tenants')).toEqual([
    ['acme', '5', '0', '2', 'none', '—'],
    ['globex', '2', '0', '2', 'none', '—'],
    [SLASHED, '1', '0', '2', 'none', '—'],
  ]);

  // Set an override: a value out of bounds is refused here (nothing sent), then a good one is saved.
  await page.getByRole('button', { name: `Set override of key ${SLASHED}` }).click();
  const form = page.getByRole('form', { name: `Override for key ${SLASHED}` });
  await form.getByLabel('Concurrency of this key').fill('0');
  await form.getByRole('button', { name: 'Save override' }).click();
  await form.getByText('must be an integer 1..100000').waitFor();
  expect((await keysOf()).find((k) => k.key === SLASHED)?.overrides).toBeNull();
  await form.getByLabel('Concurrency of this key').fill('7');
  await form.getByLabel('Rate limit of this key: starts').fill('10');
  await form.getByLabel('Rate limit of this key: per (ms)').fill('60000');
  await form.getByRole('button', { name: 'Save override' }).click();
  await page.getByText(`Override of key ${SLASHED} saved`).waitFor();
  await until(async () => (await keyRows(page, 'tenants')).some((r) => r.join('|') === [SLASHED, '1', '0', '7', '10 per 1 min', 'override concurrency, rate limit'].join('|')));
  expect((await keysOf()).find((k) => k.key === SLASHED)).toMatchObject({ overrides: { concurrency: 7, rateLimit: { max: 10, durationMs: 60000 } }, limits: { concurrency: 7, rateLimit: { max: 10, durationMs: 60000 } } });
  await page.screenshot({ path: join(SHOTS, 'queue-keys.png'), fullPage: true });
  expect(await axeViolations(page)).toEqual([]);

  // The per-key settings: the keys without an override follow the queue's new keyConcurrency.
  await page.getByLabel('Per-key concurrency').fill('3');
  await page.getByRole('button', { name: 'Save settings' }).click();
  await page.getByText('Saved.').waitFor();
  expect((await as(api.http.get('/queues/tenants'))).body).toMatchObject({ keyConcurrency: 3 });
  await until(async () => (await keyRows(page, 'tenants')).find((r) => r[0] === 'acme')?.[3] === '3');
  expect((await keyRows(page, 'tenants')).find((r) => r[0] === SLASHED)?.[3]).toBe('7');

  // Remove it (confirmed): back to the queue's limits.
  await page.getByRole('button', { name: `Edit override of key ${SLASHED}` }).click();
  await page.getByRole('button', { name: 'Remove override' }).click();
  await page.getByRole('alertdialog').getByRole('button', { name: 'Remove override' }).click();
  await page.getByText(`Override of key ${SLASHED} removed.`).waitFor();
  await until(async () => (await keyRows(page, 'tenants')).some((r) => r.join('|') === [SLASHED, '1', '0', '3', 'none', '—'].join('|')));
  expect((await keysOf()).find((k) => k.key === SLASHED)?.overrides ?? null).toBeNull();

  // The job page and the explorer show the key.
  await page.goto(`${api.url}/ui/jobs/${keyed.acme}`);
  await page.locator('dt', { hasText: 'Concurrency key' }).waitFor();
  expect(await page.locator('dt:text-is("Concurrency key") + dd').textContent()).toBe('acme');
  await page.goto(`${api.url}/ui/jobs?queue=tenants`);
  await page.getByRole('region', { name: 'Jobs' }).getByText(SLASHED, { exact: true }).waitFor();
  await page.setViewportSize({ width: 390, height: 844 });
  await page.goto(`${api.url}/ui/queues/tenants`);
  await table.getByText('acme', { exact: true }).waitFor();
  expect(await noSideways(page)).toBe(true);
  await ctx.close();

  // A viewer: the same rows, no control that changes them.
  const v = await loggedIn('viewer@example.com');
  await v.page.goto(`${api.url}/ui/queues/tenants`);
  await v.page.getByRole('region', { name: 'Busiest keys of tenants' }).getByText('acme', { exact: true }).waitFor();
  expect((await keyRows(v.page, 'tenants')).map((r) => r[0])).toEqual(['acme', 'globex', SLASHED]);
  expect(await v.page.getByRole('button', { name: /override/i }).count()).toBe(0);
  expect(await v.page.getByLabel('Per-key concurrency').isDisabled()).toBe(true);
  await v.ctx.close();
});

test('a DLQ group retried with an edited payload ends completed; a whole group retried', async () => {
  const as = (r: ReturnType<TestApi['http']['post']>) => r.set('authorization', ROOT_KEY);
  // diag.fail fails while `times` ≥ the attempt: a bad payload; the fix is `times: 0`.
  const bad = (await as(api.http.post('/jobs')).send({ queue: 'pay', type: 'diag.fail', payload: { message: 'card declined by issuer', times: 99 }, maxAttempts: 1 })).body.id as string;
  const twins = [];
  for (let i = 0; i < 2; i++) twins.push((await as(api.http.post('/jobs')).send({ queue: 'pay', type: 'diag.fail', payload: { message: 'ledger locked', times: 99 }, maxAttempts: 1 })).body.id as string);
  for (const id of [bad, ...twins]) await until(async () => (await as(api.http.get(`/jobs/${id}`))).body.status === 'failed');
  const { ctx, page } = await loggedIn('ops@example.com');
  await page.goto(`${api.url}/ui/dlq`);
  const group = page.locator('li.card', { hasText: 'card declined by issuer' });
  await group.waitFor();
  await group.getByRole('button', { name: 'Show jobs' }).click();
  await group.getByRole('button', { name: `Edit & retry job ${bad}` }).click();
  await group.getByLabel(`Payload for the retry of job ${bad}`).fill('{"message": "card declined by issuer", "times": 0}');
  await group.getByRole('button', { name: 'Retry with this payload' }).click();
  await page.getByText(/retried with the edited payload/).waitFor();
  const done = await until(async () => {
    const j = (await as(api.http.get(`/jobs/${bad}`))).body;
    return j.status === 'completed' && j;
  });
  expect(done.payload).toEqual({ message: 'card declined by issuer', times: 0 });
  await page.screenshot({ path: join(SHOTS, 'dlq.png'), fullPage: true });
  // The other group, retried as a whole (confirmed): both jobs leave the DLQ (and fail again: same payload).
  const ledger = page.locator('li.card', { hasText: 'ledger locked' });
  await ledger.getByRole('button', { name: 'Retry group' }).click();
  await page.getByRole('alertdialog').getByRole('button', { name: 'Retry group' }).click();
  await page.getByRole('status').getByText('Retried 2 jobs failing with "ledger locked"').waitFor();
  for (const id of twins) await until(async () => (await as(api.http.get(`/jobs/${id}/events`))).body.items.some((e: { event: string }) => e.event === 'retried_from_dlq'));
  expect(await axeViolations(page)).toEqual([]);
  await ctx.close();
});

test('job page: a new log line, progress and the status change arrive over SSE without reload; workers show the external worker and its job', async () => {
  const as = (r: ReturnType<TestApi['http']['post']>) => r.set('authorization', ROOT_KEY);
  expect((await as(api.http.put('/queues/ext-live')).send({ external: true })).status).toBe(200);
  const id = (await as(api.http.post('/jobs')).send({ queue: 'ext-live', type: 'render', payload: { page: 1 }, maxAttempts: 1 })).body.id as string;
  const workerKey = (await as(api.http.post('/keys')).send({ name: 'w-sse', role: 'worker' })).body.secret;
  const w = (r: ReturnType<TestApi['http']['post']>) => r.set('authorization', `Bearer ${workerKey}`);
  const claimed = (await w(api.http.post('/queues/ext-live/claim')).send({ workerId: 'ext-sse', max: 1 })).body.jobs[0];
  expect(claimed.id).toBe(id);
  const { ctx, page } = await loggedIn('ops@example.com');
  const requests: { url: string; at: number }[] = [];
  page.on('request', (r) => requests.push({ url: r.url(), at: Date.now() }));
  await page.goto(`${api.url}/ui/jobs/${id}`);
  await page.getByRole('heading', { name: 'Timeline' }).waitFor();
  // The stream is open (the page asked for it) before anything changes.
  await until(async () => requests.some((r) => r.url.includes(`/dashboard/events?job=${id}`)));
  await sleep(500);
  const since = Date.now();
  await w(api.http.post(`/jobs/${id}/heartbeat`)).send({ lockToken: claimed.lockToken, logs: ['page 1 rendered'], progress: 60 });
  await page.getByLabel('Log lines').getByText('page 1 rendered').waitFor({ timeout: 15_000 });
  await until(async () => (await page.getByLabel('Progress').getAttribute('value')) === '60');
  await w(api.http.post(`/jobs/${id}/complete`)).send({ lockToken: claimed.lockToken, result: { pages: 1 } });
  await page.locator('main').getByText('completed', { exact: true }).first().waitFor({ timeout: 15_000 });
  // Without reload and without polling the logs: the stream brought them.
  const after = requests.filter((r) => r.at >= since);
  const polled = after.filter((r) => r.url.includes(`/jobs/${id}/logs`) || r.url.endsWith('/ui/jobs/' + id));
  // On failure, every request of the page since the change (a reopened stream shows as a second /dashboard/events).
  const trace = after.map((r) => `+${r.at - since} ms ${r.url.replace(api.url, '')}`).join('\n');
  expect({ polled: polled.map((r) => r.url), trace: polled.length ? trace : '' }).toEqual({ polled: [], trace: '' });
  await ctx.close();

  // Workers: the external worker with its held job as a link (claim another one to hold).
  const held = (await as(api.http.post('/jobs')).send({ queue: 'ext-live', type: 'render', payload: { page: 2 }, maxAttempts: 1 })).body.id as string;
  expect((await w(api.http.post('/queues/ext-live/claim')).send({ workerId: 'ext-sse', max: 1 })).body.jobs[0].id).toBe(held);
  const s = await loggedIn('ops@example.com');
  await s.page.goto(`${api.url}/ui/workers`);
  const row = s.page.locator('tr', { hasText: 'ext-sse' });
  await row.waitFor();
  expect(await row.textContent()).toContain('external');
  await row.getByRole('link', { name: held.slice(-12) }).click();
  await s.page.waitForURL(new RegExp(`/ui/jobs/${held}$`));
  await s.page.goto(`${api.url}/ui/workers`);
  await s.page.locator('tr', { hasText: 'ext-sse' }).waitFor();
  await s.page.screenshot({ path: join(SHOTS, 'workers.png'), fullPage: true });
  expect(await axeViolations(s.page)).toEqual([]);
  await s.ctx.close();
});

test('explorer: from/to and payload search live in the URL; paging over 10,000 jobs without overlap while jobs arrive', async () => {
  const as = (r: ReturnType<TestApi['http']['post']>) => r.set('authorization', ROOT_KEY);
  expect((await as(api.http.put('/queues/bulk')).send({ external: true })).status).toBe(200);
  const N = 10_000;
  const enqueued: string[] = [];
  for (let b = 0; b < N / 1000; b++) {
    const r = await as(api.http.post('/jobs/batch')).send({ jobs: Array.from({ length: 1000 }, (_, i) => ({ queue: 'bulk', type: 'row', payload: { orderId: b * 1000 + i } })) });
    expect(r.status).toBe(201);
    enqueued.push(...(r.body.jobs as { id: string }[]).map((j) => j.id));
  }
  // Mirrored to PostgreSQL (the explorer reads there).
  await until(async () => (await as(api.http.get(`/jobs?queue=bulk&limit=1&payload=${encodeURIComponent('{"orderId":0}')}&from=${new Date(Date.now() - 3_600_000).toISOString()}`))).body.items?.length === 1, 120_000);
  const { ctx, page } = await loggedIn('ops@example.com');
  // Payload search through the form: the URL carries it; the one matching job is listed.
  await page.goto(`${api.url}/ui/jobs?queue=bulk`);
  await page.getByLabel('Payload contains').fill('{"orderId": 4242}');
  await page.getByRole('button', { name: 'Apply' }).click();
  await page.waitForURL(/payload=/);
  const url = new URL(page.url());
  expect(JSON.parse(url.searchParams.get('payload') ?? '')).toEqual({ orderId: 4242 });
  expect(Date.parse(url.searchParams.get('from') ?? '')).toBeLessThan(Date.now());
  await page.getByRole('region', { name: 'Jobs' }).getByRole('link', { name: enqueued[4242].slice(-12) }).waitFor();
  expect(await page.getByRole('region', { name: 'Jobs' }).getByRole('link').count()).toBe(1);
  await page.screenshot({ path: join(SHOTS, 'jobs-payload.png'), fullPage: true });
  // A `to` before the first job: nothing.
  await page.goto(`${api.url}/ui/jobs?queue=bulk&to=2020-01-01T00%3A00%3A00.000Z`);
  await page.getByText('No job matches.').waitFor();

  // Page through everything in the browser (its session, GET /jobs keyset cursors) while another loop enqueues.
  let arriving = true;
  const more = (async () => {
    let n = 0;
    while (arriving) {
      await as(api.http.post('/jobs/batch')).send({ jobs: Array.from({ length: 50 }, (_, i) => ({ queue: 'bulk', type: 'row', payload: { late: n * 50 + i } })) });
      n++;
      await sleep(50);
    }
    return n * 50;
  })();
  const seen: string[] = await page.evaluate(async () => {
    const ids: string[] = [];
    let cursor: string | null = null;
    do {
      const q = new URLSearchParams({ queue: 'bulk', limit: '200', ...(cursor ? { cursor } : {}) });
      const r = await fetch(`/jobs?${q}`, { headers: { accept: 'application/json' }, credentials: 'same-origin' });
      if (!r.ok) throw new Error(`GET /jobs ${r.status}`);
      const body = (await r.json()) as { items: { id: string }[]; nextCursor: string | null };
      ids.push(...body.items.map((j) => j.id));
      cursor = body.nextCursor;
    } while (cursor);
    return ids;
  });
  arriving = false;
  const late = await more;
  expect(late).toBeGreaterThan(0);
  expect(new Set(seen).size).toBe(seen.length); // no duplicate
  // None skipped among those older than the first page's first id (all 10,000 are).
  const first = seen[0];
  const seenSet = new Set(seen);
  expect(enqueued.filter((id) => id <= first && !seenSet.has(id))).toEqual([]);
  expect(enqueued.every((id) => seenSet.has(id))).toBe(true);
  await ctx.close();
}, 300_000);
