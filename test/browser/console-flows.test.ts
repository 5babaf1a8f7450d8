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
 * The console's workflow views end to end (API.md v1.2 "Workflows", docs/console.md): real Chromium,
 * a real server (ROLE=all, AUTH=on) on real Redis and PostgreSQL, the console as `npm run build`
 * makes it. A diamond flow submitted through POST /flows on an external queue, moved by hand through
 * the worker protocol (a completed with a result, b completed, c held active, d blocked); a viewer
 * reads its job pages (dependencies, dependents, the flow by depth), follows a link, and filters the
 * explorer by flow. Another project's flow shows nothing. Screenshots: docs/screenshots/job-flow.png, jobs-flow.png.
 */
const ROOT = join(__dirname, '..', '..');
const SHOTS = join(ROOT, 'docs', 'screenshots');
const BOOTSTRAP = 'sk_' + randomBytes(32).toString('base64url');
const ROOT_KEY = `Bearer ${BOOTSTRAP}`;
const PASSWORD = 'correct horse battery';

let api: TestApi;
let browser: Browser;
let flowId: string;
let id: Record<string, string>;
let otherFlow: { flowId: string; jobId: string };
let loneJob: string;


type Req = ReturnType<TestApi['http']['post']>;
const as = (r: Req) => r.set('authorization', ROOT_KEY);

beforeAll(async () => {
  ensureConsoleBuilt(ROOT);
  mkdirSync(SHOTS, { recursive: true });
  api = await startTestApi('console-flows', { ROLE: 'all', AUTH: 'on', SLUICE_BOOTSTRAP_ADMIN_KEY: BOOTSTRAP });
  expect((await as(api.http.post('/users')).send({ username: 'viewer@example.com', password: PASSWORD, role: 'viewer' })).status).toBe(201);
  // An external queue: nothing runs its jobs but this test, so each state holds still while the pages are read.
  expect((await as(api.http.put('/queues/etl')).send({ external: true })).status).toBe(200);
  const res = await as(api.http.post('/flows')).send({
    jobs: [
      { ref: 'extract', queue: 'etl', type: 'etl.extract', payload: { n: 1 } },
      { ref: 'left', queue: 'etl', type: 'etl.left', payload: {}, dependsOn: ['extract'] },
      { ref: 'right', queue: 'etl', type: 'etl.right', payload: {}, dependsOn: ['extract'] },
      { ref: 'join', queue: 'etl', type: 'etl.join', payload: {}, dependsOn: ['left', 'right'] },
    ],
  });
  expect(res.status).toBe(201);
  flowId = res.body.flowId;
  id = Object.fromEntries((res.body.jobs as { ref: string; id: string }[]).map((j) => [j.ref, j.id]));
  const workerKey = (await as(api.http.post('/keys')).send({ name: 'w', role: 'worker' })).body.secret as string;
  const w = (r: Req) => r.set('authorization', `Bearer ${workerKey}`);
  /** Claims `n` jobs of etl (waiting until the flow worker has released them): their lock tokens by id. */
  const claim = async (n: number) => {
    const tokens: Record<string, string> = {};
    await until(async () => {
      for (const j of (await w(api.http.post('/queues/etl/claim')).send({ workerId: 'etl-1', max: n })).body.jobs as { id: string; lockToken: string }[]) tokens[j.id] = j.lockToken;
      return Object.keys(tokens).length >= n;
    });
    return tokens;
  };
  const complete = async (ref: string, lockToken: string, result: unknown) => expect((await w(api.http.post(`/jobs/${id[ref]}/complete`)).send({ lockToken, result })).status).toBe(200);
  await complete('extract', (await claim(1))[id.extract], { rows: 42 });
  const pair = await claim(2);
  expect(Object.keys(pair).sort()).toEqual([id.left, id.right].sort());
  await complete('left', pair[id.left], { side: 'left' }); // right stays active: join stays blocked
  // A job outside flows, and a flow of another project the viewer must not see.
  loneJob = (await as(api.http.post('/jobs')).send({ queue: 'etl', type: 'etl.lone', payload: {} })).body.id;
  expect((await as(api.http.post('/projects')).send({ name: 'other' })).status).toBe(201);
  const o = (r: Req) => as(r).set('x-sluice-project', 'other');
  expect((await o(api.http.put('/queues/etl')).send({ external: true })).status).toBe(200);
  const other = await o(api.http.post('/flows')).send({ jobs: [{ ref: 'secret', queue: 'etl', type: 'etl.secret', payload: {} }] });
  expect(other.status).toBe(201);
  otherFlow = { flowId: other.body.flowId, jobId: other.body.jobs[0].id };
  browser = await launchChromium();
}, 120_000);

afterAll(async () => {
  await browser?.close();
  await api?.close();
});

const loggedIn = (username: string, width = 1280) => logIn(browser, api.url, username, PASSWORD, width);

/** A table's rows as their cells' text. */
const rows = (page: Page, caption: string) =>
  page
    .getByRole('region', { name: caption })
    .locator('tbody tr')
    .evaluateAll((trs) => trs.map((tr) => Array.from(tr.querySelectorAll('td')).map((td) => td.textContent ?? '')));

/** The flow's indented list: ref, depth, status, and whether it is the page's job. */
const flowList = (page: Page) =>
  page
    .getByRole('list', { name: 'Jobs of the flow by depth' })
    .locator('li')
    .evaluateAll((lis) => lis.map((li) => [li.getAttribute('data-ref'), Number(li.getAttribute('data-depth')), li.querySelector('.badge')?.textContent, li.getAttribute('aria-current') === 'true']));

test('a viewer reads a diamond flow from its job pages: dependencies, dependents, the flow by depth; a link opens the dependency', async () => {
  const { ctx, page } = await loggedIn('viewer@example.com');
  await page.goto(`${api.url}/ui/jobs/${id.join}`);
  const deps = page.getByRole('region', { name: 'Jobs it waits for' });
  await deps.getByRole('link', { name: 'left' }).waitFor();
  expect(await rows(page, 'Jobs it waits for')).toEqual([
    ['left', 'completed', '{"side":"left"}'],
    ['right', 'active', '—'],
  ]);
  expect(await rows(page, 'Jobs that wait for it')).toEqual([['No job of the flow waits for it.']]);
  expect(await flowList(page)).toEqual([
    ['extract', 0, 'completed', false],
    ['left', 1, 'completed', false],
    ['right', 1, 'active', false],
    ['join', 2, 'blocked', true],
  ]);
  const flow = page.getByRole('region', { name: 'Flow', exact: true });
  expect(await flow.locator('.flow-counts').textContent()).toBe('1 active · 2 completed · 1 blocked');
  expect(await flow.locator('p .badge').first().textContent()).toBe('running');
  expect(await axeViolations(page)).toEqual([]);
  await page.screenshot({ path: join(SHOTS, 'job-flow.png'), fullPage: true });

  // Following a dependency's link opens its page: its own dependency (with the result) and its dependents.
  await deps.getByRole('link', { name: 'right' }).click();
  await page.waitForURL(new RegExp(`/ui/jobs/${id.right}$`));
  await page.getByRole('region', { name: 'Jobs that wait for it' }).getByRole('link', { name: 'join' }).waitFor();
  expect(await rows(page, 'Jobs that wait for it')).toEqual([['join', 'blocked', 'left']]);
  await deps.getByRole('link', { name: 'extract' }).waitFor();
  expect(await rows(page, 'Jobs it waits for')).toEqual([['extract', 'completed', '{"rows":42}']]);
  expect((await flowList(page)).map((l) => l[3])).toEqual([false, false, true, false]);

  // A viewer may read all of it, and gets nothing that changes it; 390 px wide without sideways scrolling.
  const buttons = await page.getByRole('button').allTextContents();
  expect(buttons.filter((b) => /cancel|retry|clone/i.test(b))).toEqual([]);
  await page.setViewportSize({ width: 390, height: 844 });
  await sleep(200);
  expect(await page.evaluate(() => document.documentElement.scrollWidth <= window.innerWidth)).toBe(true);
  await ctx.close();
});

test('the explorer filters by flow: from the flow section\'s link and from the form, kept in the URL; another project\'s flow shows nothing', async () => {
  const { ctx, page } = await loggedIn('viewer@example.com');
  await page.goto(`${api.url}/ui/jobs/${id.extract}`);
  await page.getByRole('link', { name: 'Jobs of this flow in the explorer' }).click();
  await page.waitForURL(new RegExp(`/ui/jobs\\?flowId=${flowId}$`));
  const results = page.getByRole('region', { name: 'Jobs' });
  await results.getByRole('link', { name: id.extract.slice(-12) }).waitFor();
  const listed = async () => (await results.locator('tbody tr td:first-child a').allTextContents()).sort();
  expect(await listed()).toEqual(Object.values(id).map((j) => j.slice(-12)).sort());
  expect(await page.getByLabel('Flow id').inputValue()).toBe(flowId);
  // The Flow column: the flow (a link to this same filter) and each job's ref.
  const flowCells = await results.locator('tbody tr').evaluateAll((trs, col) => trs.map((tr) => tr.querySelectorAll('td')[col]?.textContent), await results.locator('th').evaluateAll((ths) => ths.findIndex((th) => th.textContent === 'Flow')));
  expect(flowCells.sort()).toEqual(['extract', 'join', 'left', 'right'].map((r) => `${flowId.slice(-12)} ${r}`));
  await page.screenshot({ path: join(SHOTS, 'jobs-flow.png'), fullPage: true });
  expect(await axeViolations(page)).toEqual([]);

  // From the form: a bad id is refused before anything is sent; a good one lands in the URL.
  await page.goto(`${api.url}/ui/jobs`);
  await results.getByRole('link', { name: loneJob.slice(-12) }).waitFor();
  await page.getByLabel('Flow id').fill('not-a-flow');
  await page.getByRole('button', { name: 'Apply' }).click();
  await page.getByText(/Flow id is a UUID/).waitFor();
  await page.getByLabel('Flow id').fill(flowId);
  await page.getByRole('button', { name: 'Apply' }).click();
  await page.waitForURL(new RegExp(`flowId=${flowId}`));
  await until(async () => (await listed()).length === 4 && !(await listed()).includes(loneJob.slice(-12)));

  // A job outside flows: no workflow sections.
  await page.goto(`${api.url}/ui/jobs/${loneJob}`);
  await page.getByRole('region', { name: 'Timeline' }).waitFor();
  await sleep(300);
  expect(await page.getByRole('region', { name: 'Jobs it waits for' }).count()).toBe(0);
  expect(await page.getByRole('region', { name: 'Flow', exact: true }).count()).toBe(0);

  // Another project's flow: its job is not found, its flow filters to nothing.
  await page.goto(`${api.url}/ui/jobs/${otherFlow.jobId}`);
  await page.getByText(/Could not load job .*404/).waitFor();
  await page.goto(`${api.url}/ui/jobs?flowId=${otherFlow.flowId}`);
  await results.getByText('No job matches.').waitFor();
  expect(await page.locator('main').textContent()).not.toContain('secret');
  await ctx.close();
});
