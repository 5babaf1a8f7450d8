import { randomBytes } from 'node:crypto';

/**
 * This jest run's id (6 hex digits): part of every test key prefix
 * (`t-<name>-<run>-<hex>`) and test database name
 * (`sluice_test_<name>_<run>_<hex>`), so the run's global teardown
 * (test/support/global-teardown.js) finds what this run left behind and
 * nothing of another run on the same machine. Set by
 * test/support/global-setup.js; random per process when jest runs without it.
 */
export const TEST_RUN: string = process.env.SLUICE_TEST_RUN || randomBytes(3).toString('hex');
