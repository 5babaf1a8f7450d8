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
  testTimeout: 60000,
};
