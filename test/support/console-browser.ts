import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Browser, BrowserContext, Page } from 'playwright-core';

/** Builds the console (vite) into `<root>/dist/console` unless it is there already. */
export function ensureConsoleBuilt(root: string): void {
  if (!existsSync(join(root, 'dist', 'console', 'index.html'))) execFileSync(join(root, 'node_modules', '.bin', 'vite'), ['build', '--config', 'src/dashboard/console/vite.config.ts'], { cwd: root, stdio: 'ignore' });
}

/**
 * A fresh browser context logged in to the console at `url` (the login form,
 * then the Overview): a page error fails the test. `width` in CSS px.
 */
export async function logIn(browser: Browser, url: string, username: string, password: string, width = 1280): Promise<{ ctx: BrowserContext; page: Page }> {
  const ctx = await browser.newContext({ viewport: { width, height: 900 }, colorScheme: 'light' });
  const page = await ctx.newPage();
  page.on('pageerror', (e) => {
    throw e;
  });
  await page.goto(`${url}/ui/`);
  await page.waitForURL(/\/ui\/login$/);
  await page.getByLabel('Username').fill(username);
  await page.getByLabel('Password').fill(password);
  await page.getByRole('button', { name: 'Log in' }).click();
  await page.getByRole('heading', { name: 'Overview' }).waitFor();
  return { ctx, page };
}

let axeSource: string | null = null;

/** axe-core in the page (injected through the CDP, so the page's CSP does not apply): serious or critical violations. */
export async function axeViolations(page: Page): Promise<string[]> {
  axeSource ??= readFileSync(require.resolve('axe-core/axe.min.js'), 'utf8');
  await page.evaluate(axeSource);
  const r = await page.evaluate(async () => (window as unknown as { axe: { run: (c: unknown) => Promise<{ violations: { id: string; impact: string; nodes: { target: string[] }[] }[] }> } }).axe.run(document));
  return r.violations.filter((v) => v.impact === 'serious' || v.impact === 'critical').map((v) => `${v.id}: ${v.nodes.map((n) => n.target.join(' ')).slice(0, 3).join(', ')}`);
}

/** Polls `f` every 100 ms until it answers something truthy (returned), or throws after `ms`. */
export async function until<T>(f: () => Promise<T | undefined | null | false>, ms = 20_000): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const v = await f();
    if (v) return v;
    if (Date.now() > end) throw new Error('timed out');
    await new Promise((r) => setTimeout(r, 100));
  }
}
