#!/usr/bin/env node
/*
 * First useful paint of the operator console with 1,000,000 jobs in PostgreSQL
 * (docs/benchmarks.md, "Console: first useful paint"; target ≤ 1 s).
 *
 *   npm run build && node scripts/bench/console-paint.js
 *
 * Seeds a fresh database with JOBS rows in `jobs` (and their events,
 * executions, logs and dead letters) the way scripts/explain-queries.js does
 * (generate_series, UUIDv7-like ids), starts `node dist/main.js` on it (ROLE=all,
 * AUTH=off, a private REDIS_PREFIX; the seeded queues are made external and get
 * one waiting job each, so nothing runs), then loads each view LOADS times in
 * headless Chromium, each load in a fresh browser context (no HTTP cache, a cold
 * app), and measures (ms since the navigation started) when the view's first
 * meaningful content is painted: a MutationObserver in the page notes the first
 * mutation after which the selector matches, and the figure is the time of a
 * task queued from the next animation frame's callback (it runs once that
 * frame, the one that draws the element, is done). Printed beside it:
 * `performance.now()` once Playwright's waitFor has seen the element (the
 * figure of the runs before 2026-12-04 22:30, which adds Playwright's polling
 * and a round trip, ~100–230 ms on this machine). The views:
 *   /ui/      the overview's queue table has its first queue link;
 *   /ui/jobs  the explorer's first job row link.
 * Prints the median, min and max per view and the requests each load made.
 * Env: JOBS (default 1000000), LOADS (default 7), LATENCY_MS (added to every
 * request through Chromium's network emulation; default 0), KEEP_DB=1 keeps the database
 * (then DATABASE_URL=<it> reuses it without seeding), TRACE=1 prints each
 * request of the last load with its start and end (ms since navigation).
 */
const path = require('node:path');
const { Client } = require('pg');
const { generateSql } = require('../explain-queries');
const { pickPort, isolation, startServer, waitReady, cleanup } = require('../lib/server');

const dist = (p) => require(path.resolve(__dirname, '../../dist', p));
const { openPostgres } = dist('postgres/data-source');
const { ensureDays, DAY_MS, PARTITION_DAYS_AHEAD } = dist('postgres/partitions');

const JOBS = Number(process.env.JOBS || 1_000_000);
const LOADS = Number(process.env.LOADS || 7);
/** Round-trip latency added to every request of the page (ms; 0 = none): a browser away from the server. */
const LATENCY_MS = Number(process.env.LATENCY_MS || 0);
const CHROMIUM = process.env.CHROMIUM_PATH || '/usr/bin/chromium';
const QUEUES = ['default', 'emails', 'images', 'reports', 'webhooks', 'exports', 'billing'];
const VIEWS = [
  { path: '/ui/', what: 'overview: first row of the queue table', selector: '.table-wrap[aria-label="Queues"] tbody a' },
  { path: '/ui/jobs', what: 'explorer: first job row', selector: '[role="region"][aria-label="Jobs"] tbody a' },
];

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

async function seed(databaseUrl) {
  const t0 = Date.now();
  const { dataSource } = await openPostgres(databaseUrl, 2);
  // The day partitions of the 30 days the rows span (src/postgres/partitions.ts).
  await ensureDays(dataSource, Date.now() - 31 * DAY_MS, Date.now() + PARTITION_DAYS_AHEAD * DAY_MS);
  await dataSource.destroy();
  const c = new Client({ connectionString: databaseUrl });
  await c.connect();
  try {
    const had = (await c.query('SELECT count(*)::int AS n FROM jobs')).rows[0].n;
    if (had > 0) {
      console.error(`${databaseUrl} already holds ${had.toLocaleString('en')} jobs: not seeded again`);
      return had;
    }
    for (const sql of generateSql(JOBS)) await c.query(sql);
    await c.query('VACUUM (ANALYZE)');
    const n = (await c.query('SELECT count(*)::int AS n FROM jobs')).rows[0].n;
    console.error(`seeded ${n.toLocaleString('en')} jobs in ${((Date.now() - t0) / 1000).toFixed(0)} s`);
    return n;
  } finally {
    await c.end();
  }
}

async function main() {
  const { prefix, databaseUrl, ownDb } = isolation('paint');
  const jobs = await seed(databaseUrl);
  const port = await pickPort();
  const server = startServer({ port, env: { ROLE: 'all', AUTH: 'off', REDIS_PREFIX: prefix, DATABASE_URL: databaseUrl, LOG_LEVEL: 'warn' } });
  let browser;
  try {
    // A fresh prefix: the audit role restores every unfinished and dead-lettered job from PostgreSQL first (300,000 at 10M rows).
    await waitReady(server, Number(process.env.READY_TIMEOUT_MS || 900_000));
    const api = (method, p, body) => fetch(`${server.url}${p}`, { method, headers: { 'content-type': 'application/json' }, body: body && JSON.stringify(body) });
    for (const q of QUEUES) {
      await api('PUT', `/queues/${q}`, { external: true });
      await api('POST', '/jobs', { queue: q, type: `${q}.send`, payload: { n: 0 } });
    }
    const { chromium } = require('playwright-core');
    browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage'] });
    const rows = [];
    for (const view of VIEWS) {
      const times = [];
      const seen = [];
      let requests = 0;
      for (let i = 0; i <= LOADS; i++) {
        const ctx = await browser.newContext({ viewport: { width: 1280, height: 900 } });
        const page = await ctx.newPage();
        if (LATENCY_MS > 0) {
          // An operator's browser on another machine: every request waits LATENCY_MS more (Chromium's own throttling).
          const cdp = await ctx.newCDPSession(page);
          await cdp.send('Network.enable');
          await cdp.send('Network.emulateNetworkConditions', { offline: false, latency: LATENCY_MS, downloadThroughput: -1, uploadThroughput: -1 });
        }
        let n = 0;
        const trace = [];
        page.on('request', () => n++);
        page.on('requestfinished', (r) => {
          const t = r.timing();
          trace.push(`${(t.startTime - 0).toFixed(0)} +${t.responseEnd.toFixed(0)} ${r.method()} ${r.url().replace(server.url, '')}`);
        });
        // When the element first exists, the next frame draws it: a task queued from that
        // frame's requestAnimationFrame callback runs once the frame (style, layout, paint) is done.
        await page.addInitScript((sel) => {
          const seen = () => {
            if (window.__paintedAt !== undefined || !document.querySelector(sel)) return;
            window.__paintedAt = null;
            requestAnimationFrame(() => setTimeout(() => (window.__paintedAt = performance.now()), 0));
          };
          new MutationObserver(seen).observe(document, { subtree: true, childList: true });
          document.addEventListener('DOMContentLoaded', seen);
        }, view.selector);
        await page.goto(`${server.url}${view.path}`, { waitUntil: 'commit' });
        await page.locator(view.selector).first().waitFor({ timeout: 30_000 });
        const seenMs = await page.evaluate(() => performance.now());
        await page.waitForFunction(() => typeof window.__paintedAt === 'number', null, { timeout: 30_000 });
        const ms = await page.evaluate(() => window.__paintedAt);
        if (process.env.TRACE === '1' && i === LOADS) {
          const origin = await page.evaluate(() => performance.timeOrigin);
          console.error(`${view.path}: painted at ${ms.toFixed(0)} ms (seen by Playwright at ${seenMs.toFixed(0)})\n  ${trace.map((l) => l.replace(/^(\d+)/, (x) => (Number(x) - origin).toFixed(0))).join('\n  ')}`);
        }
        await ctx.close();
        if (i === 0) continue; // the first load warms the server (JIT, pools, PostgreSQL's cache)
        times.push(ms);
        seen.push(seenMs);
        requests = n;
      }
      rows.push({ ...view, median: median(times), min: Math.min(...times), max: Math.max(...times), seen: median(seen), requests });
    }
    console.log(`Console first useful paint, ${jobs.toLocaleString('en')} jobs in PostgreSQL${LATENCY_MS ? `, ${LATENCY_MS} ms added to each request` : ''}, ${LOADS} loads per view (fresh browser context each, after one warm-up load):\n`);
    console.log('| view | first meaningful content | painted, median ms | min ms | max ms | seen by Playwright, median ms | requests by then |');
    console.log('|---|---|---|---|---|---|---|');
    for (const r of rows) console.log(`| \`${r.path}\` | ${r.what} | ${r.median.toFixed(0)} | ${r.min.toFixed(0)} | ${r.max.toFixed(0)} | ${r.seen.toFixed(0)} | ${r.requests} |`);
    const slow = rows.filter((r) => r.median > 1000);
    if (slow.length) {
      console.error(`over the 1 s target: ${slow.map((r) => r.path).join(', ')}`);
      process.exitCode = 1;
    }
  } finally {
    await browser?.close();
    await server.stop();
    if (process.env.KEEP_DB === '1') console.error(`kept ${databaseUrl}`);
    await cleanup({ prefix, databaseUrl, dropDb: ownDb && process.env.KEEP_DB !== '1' });
  }
}

main().catch((e) => {
  console.error(`console-paint failed: ${e.stack || e.message}`);
  process.exit(1);
});
