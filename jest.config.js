/** Unit tests live next to the code (src/**\/*.spec.ts); integration and
 * process-level tests under test/ run against real Redis (and Postgres). */
module.exports = {
  moduleFileExtensions: ['js', 'json', 'ts'],
  rootDir: '.',
  testMatch: ['<rootDir>/src/**/*.spec.ts', '<rootDir>/test/**/*.test.ts'],
  transform: { '^.+\\.ts$': 'ts-jest' },
  testEnvironment: 'node',
  // See test/support/content-disposition-cjs.js.
  moduleNameMapper: { '^content-disposition$': '<rootDir>/test/support/content-disposition-cjs.js' },
  // A run id for key prefixes and database names; at the end, what the run
  // left on Redis/PostgreSQL fails it (test/support/global-*.js).
  globalSetup: '<rootDir>/test/support/global-setup.js',
  globalTeardown: '<rootDir>/test/support/global-teardown.js',
  // No test may open the user's database (`sluice`, or the caller's DATABASE_URL).
  setupFiles: ['<rootDir>/test/support/no-default-database.ts'],
  testTimeout: 60000,
};
