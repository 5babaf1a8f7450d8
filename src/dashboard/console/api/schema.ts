/**
 * The API's types, generated from the server's OpenAPI document once for the
 * whole repository: `npm run generate -w @sluice/client` writes
 * clients/typescript/src/schema.d.ts (test/e2e/client-types.test.ts fails
 * when it is stale). The console and the client read the same file.
 */
export type { components, paths } from '../../../../clients/typescript/src/schema';
