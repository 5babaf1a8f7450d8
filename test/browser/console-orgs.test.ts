/// <reference lib="dom" />
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import type { Browser } from 'playwright-core';
import { launchChromium } from '../support/chromium';
import { axeViolations, ensureConsoleBuilt, logIn, until } from '../support/console-browser';
import { startTestApi, type TestApi } from '../support/http';

/**
 * The console's organizations (API.md v1.3) in a real Chromium on a real
 * server: the header's project switcher offers the user's projects only and
 * switches what every view shows; the members page (owners and admins)
 * invites with roles per project and hidePayloads, changes a role (the
 * member's session ends), removes; the invitation page sets the password; a
 * member who hides payloads reads "[hidden]" on the job page.
 */
const ROOT = join(__dirname, '..', '..');
const BOOTSTRAP = 'sk_' + randomBytes(32).toString('base64url');
const PASSWORD = 'correct horse battery';
const SECRET = 'sekret-' + randomBytes(5).toString('hex');
let api: TestApi;
let browser: Browser;
let secretJob: string;

const root = (r: any, project?: string) => {
  const x = r.set('authorization', `Bearer ${BOOTSTRAP}`);
  return project ? x.set('x-sluice-project', project) : x;
};

/** A member added by the root key, its invitation accepted through the API. */
async function member(org: string, body: Record<string, unknown>): Promise<void> {
  const r = await root(api.http.post(`/orgs/${org}/members`)).send(body);
  expect(r.status).toBe(201);
  if (r.body.inviteToken) expect((await api.http.post('/auth/accept-invite').send({ token: r.body.inviteToken, password: PASSWORD })).status).toBe(200);
}

beforeAll(async () => {
  ensureConsoleBuilt(ROOT);
  api = await startTestApi('consoleorgs', { ROLE: 'api,audit', AUTH: 'on', SLUICE_BOOTSTRAP_ADMIN_KEY: BOOTSTRAP });
  for (const org of ['acme', 'beta', 'gamma']) expect((await root(api.http.post('/orgs')).send({ name: org })).status).toBe(201);
  for (const [name, org] of [['shop', 'acme'], ['ops', 'acme'], ['web', 'beta'], ['secret-x', 'gamma']]) expect((await root(api.http.post('/projects')).send({ name, org })).status).toBe(201);
  for (const [project, queue] of [['shop', 'shop-q'], ['web', 'web-q'], ['secret-x', 'gamma-q']]) expect((await root(api.http.put(`/queues/${queue}`), project).send({ external: true })).status).toBe(200);
  secretJob = (await root(api.http.post('/jobs'), 'shop').send({ queue: 'shop-q', type: 'ext.t', payload: { card: SECRET } })).body.id;
  await member('acme', { username: 'olga', orgRole: 'owner' });
  await member('beta', { username: 'olga', orgRole: 'member', projects: { web: 'viewer' } });
  await member('acme', { username: 'mo', orgRole: 'member', projects: { shop: 'operator' } });
  browser = await launchChromium();
}, 120_000);

afterAll(async () => {
  await browser?.close();
  await api?.close();
});

test("the header's switcher lists the user's projects only and switches every view", async () => {
  const { ctx, page } = await logIn(browser, api.url, 'olga', PASSWORD);
  const sw = page.getByLabel('Project');
  await sw.waitFor();
  const options = await sw.locator('option').evaluateAll((os) => os.map((o) => (o as HTMLOptionElement).value));
  expect(options).toEqual(['ops', 'shop', 'web']);
  expect(await sw.inputValue()).toBe('ops');
  await sw.selectOption('shop');
  await page.getByRole('link', { name: 'shop-q' }).first().waitFor();
  await sw.selectOption('web');
  await page.getByRole('link', { name: 'web-q' }).first().waitFor();
  expect(await page.locator('header').textContent()).toContain('olga (viewer)');
  expect(await page.locator('main').textContent()).not.toContain('shop-q');
  // Nothing of the third organization anywhere.
  expect(await page.content()).not.toContain('gamma-q');
  expect(await page.content()).not.toContain('secret-x');
  // The members page is offered for the organization olga owns.
  expect(await page.getByRole('link', { name: 'Members' }).getAttribute('href')).toBe('/ui/orgs/acme/members');
  await ctx.close();
});

test('members page: invite with roles and hidePayloads, the invitation page, a role change ending the session, removal', async () => {
  const { ctx, page } = await logIn(browser, api.url, 'olga', PASSWORD);
  await page.getByRole('link', { name: 'Members' }).click();
  await page.getByRole('heading', { name: 'Members of acme' }).waitFor();
  await page.getByRole('listitem', { name: 'Member mo' }).waitFor();
  const form = page.getByRole('form', { name: 'Invite a member' });
  await form.getByLabel('Username').fill('newbie@example.com');
  await form.getByLabel('shop').selectOption('operator');
  await form.getByLabel('Hide payloads').check();
  await form.getByRole('button', { name: 'Invite' }).click();
  const link = (await page.getByTestId('invite-link').textContent()) as string;
  expect(link).toMatch(new RegExp(`^${api.url}/ui/invite#token=inv_[A-Za-z0-9_-]{43}$`));
  await page.getByRole('listitem', { name: 'Member newbie@example.com' }).waitFor();
  expect(await page.getByRole('listitem', { name: 'Member newbie@example.com' }).textContent()).toContain('invited');
  expect(await axeViolations(page)).toEqual([]);

  // The invitee opens the link, sets a password, logs in: shop, operator, payloads hidden.
  const inv = await browser.newContext({ viewport: { width: 390, height: 800 } });
  const ip = await inv.newPage();
  await ip.goto(link);
  await ip.getByRole('heading', { name: 'Accept your invitation' }).waitFor();
  expect(await axeViolations(ip)).toEqual([]);
  await ip.getByLabel('New password').fill('short');
  await ip.getByLabel('Repeat it').fill('short');
  await ip.getByRole('button', { name: 'Set password' }).click();
  await ip.getByText('The password: must be at least 12 characters').waitFor();
  await ip.getByLabel('New password').fill(PASSWORD);
  await ip.getByLabel('Repeat it').fill(PASSWORD);
  await ip.getByRole('button', { name: 'Set password' }).click();
  await ip.getByText('Your password is set.').waitFor();
  await inv.close();
  // The same link again: refused (single use).
  const again = await browser.newContext();
  const ap = await again.newPage();
  await ap.goto(link);
  await ap.getByLabel('New password').fill('another long password');
  await ap.getByLabel('Repeat it').fill('another long password');
  await ap.getByRole('button', { name: 'Set password' }).click();
  await ap.getByText('This invitation: unknown, used or expired invitation').waitFor();
  await again.close();

  const nb = await logIn(browser, api.url, 'newbie@example.com', PASSWORD);
  // The header names the user once the session has been read (a render after the login's navigation).
  await until(async () => (await nb.page.locator('header').textContent())?.includes('newbie@example.com (operator)'));
  await nb.page.goto(`${api.url}/ui/jobs/${secretJob}`);
  await nb.page.getByRole('heading', { name: 'Payload' }).waitFor();
  await until(async () => (await nb.page.locator('main').textContent())?.includes('[hidden]'));
  expect(await nb.page.content()).not.toContain(SECRET);

  // The owner makes newbie a viewer of shop: newbie's session ends at once (its next request: the login page).
  await page.reload();
  const card = page.getByRole('listitem', { name: 'Member newbie@example.com' });
  await card.getByLabel('shop').selectOption('viewer');
  await card.getByRole('button', { name: 'Save' }).click();
  await card.getByText(/Saved/).waitFor();
  await nb.page.goto(`${api.url}/ui/queues/shop-q`);
  await nb.page.waitForURL(/\/ui\/login$/);
  await nb.ctx.close();
  const members = await api.http.get('/orgs/acme/members').set('authorization', `Bearer ${BOOTSTRAP}`);
  expect(members.body.find((m: { username: string }) => m.username === 'newbie@example.com')).toMatchObject({ projects: { shop: 'viewer' }, hidePayloads: true });

  // Removal, after a confirmation.
  await card.getByRole('button', { name: 'Remove' }).click();
  await page.getByRole('alertdialog').getByRole('button', { name: 'Remove' }).click();
  await until(async () => (await page.getByRole('listitem', { name: 'Member newbie@example.com' }).count()) === 0);
  await ctx.close();
}, 120_000);

test('a plain member has no Members link, and the page answers it with the refusal', async () => {
  const { ctx, page } = await logIn(browser, api.url, 'mo', PASSWORD);
  expect(await page.getByRole('link', { name: 'Members' }).count()).toBe(0);
  expect(await page.getByLabel('Project').locator('option').allTextContents()).toEqual(['shop (operator)']);
  await page.goto(`${api.url}/ui/orgs/acme/members`);
  await page.getByText(/403 forbidden/).waitFor();
  await ctx.close();
});
