/**
 * The layers of src/ as rules dependency-cruiser checks (`npm run lint`, so
 * CI): imports point down, never in a circle. The map is
 * docs/architecture.md's:
 *
 *   server, dashboard, main.ts, app.module.ts   top: compose and serve
 *   features (jobs, queues, schedules, ...)     use cases, Nest modules, controllers
 *   http                                        what controllers share: route declarations, validation, OpenAPI decorators, the error envelope
 *   redis, postgres                             adapters: the only code that knows ioredis / the schema's plumbing
 *   core, logging, config                       bottom: the domain and the ports; no framework in core
 *
 * A rule names what is forbidden; a new folder under src/ must be placed in
 * one of the groups below (the `unplaced` rule refuses any other).
 */
const FEATURES = '^src/(auth|dashboard|handlers|health|history|jobs|maintenance|metrics|mirror|oplog|queues|restore|schedules|telemetry|workers)/';
const TOP = '^src/(server/|dashboard/|main\\.ts$|app\\.module\\.ts$)';
/** npm packages that are frameworks or drivers, as dependency-cruiser resolves them (a path under node_modules). */
const FRAMEWORKS = '(^|/)node_modules/(@nestjs|@fastify|fastify|ioredis|typeorm|pg|pino|prom-client|@opentelemetry|class-validator|class-transformer|rxjs)/';

module.exports = {
  forbidden: [
    {
      name: 'no-circular',
      comment: 'A cycle between modules means two rooms that should be one, or a port that is missing.',
      severity: 'error',
      from: { path: '^src/' },
      to: { circular: true },
    },
    {
      name: 'core-is-the-bottom',
      comment: 'src/core imports only src/core.',
      severity: 'error',
      from: { path: '^src/core/' },
      to: { path: '^src/', pathNot: '^src/core/' },
    },
    {
      name: 'core-has-no-framework',
      comment: 'src/core imports no framework (Nest, ioredis, TypeORM, pg, Fastify, pino, prom-client, OpenTelemetry, class-validator).',
      severity: 'error',
      from: { path: '^src/core/' },
      to: { path: FRAMEWORKS },
    },
    {
      name: 'bottom-stays-down',
      comment: 'logging and config import only core and each other.',
      severity: 'error',
      from: { path: '^src/(logging|config)/' },
      to: { path: '^src/', pathNot: '^src/(core|logging|config)/' },
    },
    {
      name: 'adapters-stay-down',
      comment: 'The adapters implement the ports of src/core; they import no feature, no HTTP and no other adapter.',
      severity: 'error',
      from: { path: '^src/(redis|postgres)/' },
      to: { path: '^src/', pathNot: '^src/(core|logging|config)/|^src/$1/' },
    },
    {
      name: 'ioredis-only-in-src-redis',
      comment: 'Only src/redis knows ioredis (everything else goes through a port of src/core/ports).',
      severity: 'error',
      from: { path: '^src/', pathNot: '^src/redis/' },
      to: { path: '(^|/)node_modules/ioredis/' },
    },
    {
      name: 'features-use-ports-not-redis',
      comment:
        'Features depend on the ports (src/core/ports), never on src/redis. Composition roots may: the app module, the server, ' +
        "and the mirror's worker thread (it builds its own stores).",
      severity: 'error',
      from: { path: FEATURES, pathNot: '^src/mirror/writer-thread\\.ts$' },
      to: { path: '^src/redis/' },
    },
    {
      name: 'http-kit-stays-below-features',
      comment: 'src/http is what controllers share; it imports no feature and nothing from the top.',
      severity: 'error',
      from: { path: '^src/http/' },
      to: { path: `${FEATURES}|${TOP}|^src/(redis|postgres)/` },
    },
    {
      name: 'features-do-not-reach-the-top',
      comment: 'Nothing below the top imports the server, the dashboard or the composition root.',
      severity: 'error',
      from: { path: '^src/', pathNot: TOP },
      to: { path: TOP },
    },
    {
      name: 'server-does-not-bundle-the-console',
      comment: 'The console is its own app (Vite): the server only serves its built files.',
      severity: 'error',
      from: { path: '^src/', pathNot: '^src/dashboard/console/' },
      to: { path: '^src/dashboard/console/' },
    },
    {
      name: 'unplaced',
      comment: 'Every file of src/ belongs to a layer: add a new folder to the groups of this file.',
      severity: 'error',
      from: {
        path: '^src/',
        pathNot: `^src/(core|logging|config|redis|postgres|http)/|${FEATURES}|${TOP}`,
      },
      to: {},
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    exclude: { path: '^src/dashboard/console/|\\.spec\\.ts$' },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    moduleSystems: ['cjs', 'es6'],
  },
};
