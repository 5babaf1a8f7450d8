/**
 * The ports: what features need from storage, one file per concern. Features
 * depend on these abstract classes (they are also the Nest injection tokens);
 * the adapters in `src/redis` (and `src/postgres`) implement them.
 */
export * from './clock';
export * from './connection';
export * from './dead-letters';
export * from './jobs';
export * from './queues';
export * from './wake';
export * from './mirror';
export * from './restore';
