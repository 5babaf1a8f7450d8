/**
 * The ports: what features need from storage, one file per concern. Features
 * depend on these abstract classes (they are also the Nest injection tokens);
 * the adapters in `src/redis` (and `src/postgres`) implement them.
 */
export * from './api-keys';
export * from './clock';
export * from './connection';
export * from './dead-letters';
export * from './external-workers';
export * from './jobs';
export * from './live-events';
export * from './login-limits';
export * from './oplog';
export * from './projects';
export * from './queues';
export * from './schedules';
export * from './sessions';
export * from './subscription';
export * from './token-buckets';
export * from './wake';
export * from './mirror';
export * from './restore';
export * from './flow-restore';
export * from './workers';
export * from './flows';
