export * from './errors';
export * from './client';
export * from './worker';
export { DEFAULT_RETRIES, type RetryPolicy } from './transport';
export type { paths, components, operations } from './schema';
