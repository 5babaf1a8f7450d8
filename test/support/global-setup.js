/**
 * Jest globalSetup: gives this run an id (SLUICE_TEST_RUN, 6 hex digits)
 * that test/support/run.ts reads in every test worker (workers inherit the
 * environment). Test key prefixes and database names carry it, so the
 * global teardown (global-teardown.js) can find what this run left behind
 * without touching another run's keys on the same Redis.
 */
const { randomBytes } = require('node:crypto');

module.exports = async function globalSetup() {
  if (!process.env.SLUICE_TEST_RUN) process.env.SLUICE_TEST_RUN = randomBytes(3).toString('hex');
};
