import { existsSync } from 'node:fs';
import type { Browser } from 'playwright-core';

/** Debian's chromium (installed by .ci/run when missing). */
export const CHROMIUM_PATH = process.env.CHROMIUM_PATH || '/usr/bin/chromium';

/**
 * Launches headless Chromium through playwright-core.
 * @throws Error naming the path when chromium is not installed (the suite needs it: `apt-get install chromium`).
 */
export async function launchChromium(): Promise<Browser> {
  if (!existsSync(CHROMIUM_PATH)) throw new Error(`chromium not found at ${CHROMIUM_PATH}: apt-get install chromium (scripts/test.sh does)`);
  const { chromium } = await import('playwright-core');
  return chromium.launch({ executablePath: CHROMIUM_PATH, headless: true, args: ['--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-dev-shm-usage'] });
}
