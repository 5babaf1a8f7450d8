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
const FEATURES = '^src/(auth|dashboard|flows|handlers|health|history|jobs|maintenance|metrics|mirror|oplog|queues|restore|schedules|telemetry|workers)/';
const TOP = '^src/(server/|dashboard/|main\\.ts$|app\\.module\\.ts$)';
/** npm packages that are frameworks or drivers, as dependency-cruiser resolves them (a path under node_modules). */
const FRAMEWORKS = '(^|/)node_modules/(@nestjs|@fastify|fastify|ioredis|typeorm|pg|pino|prom-client|@opentelemetry|class-validator|class-transformer|rxjs)/';

/** One forbidden dependency: `from` may not import `to` (dependency-cruiser's rule shape). */
const rule = (name, comment, from, to) => ({ name, comment, severity: 'error', from, to });

module.exports = {
  forbidden: [
    rule('no-circular', 'A cycle between modules means two rooms that should be one, or a port that is missing.',
      { path: '^src/' },
      { circular: true }),
    rule('core-is-the-bottom', 'src/core imports only src/core.',
      { path: '^src/core/' },
      { path: '^src/', pathNot: '^src/core/' }),
    rule('core-has-no-framework', 'src/core imports no framework (Nest, ioredis, TypeORM, pg, Fastify, pino, prom-client, OpenTelemetry, class-validator).',
      { path: '^src/core/' },
      { path: FRAMEWORKS }),
    rule('bottom-stays-down', 'logging and config import only core and each other.',
      { path: '^src/(logging|config)/' },
      { path: '^src/', pathNot: '^src/(core|logging|config)/' }),
    rule('adapters-stay-down', 'The adapters implement the ports of src/core; they import no feature, no HTTP and no other adapter.',
      { path: '^src/(redis|postgres)/' },
      { path: '^src/', pathNot: '^src/(core|logging|config)/|^src/$1/' }),
    rule('ioredis-only-in-src-redis', 'Only src/redis knows ioredis (everything else goes through a port of src/core/ports).',
      { path: '^src/', pathNot: '^src/redis/' },
      { path: '(^|/)node_modules/ioredis/' }),
    rule('features-use-ports-not-redis', 'Features depend on the ports (src/core/ports), never on src/redis. Composition roots may: the app module, the server, ' + "and the mirror's worker thread (it builds its own stores).",
      { path: FEATURES, pathNot: '^src/mirror/writer-thread\\.ts$' },
      { path: '^src/redis/' }),
    rule('http-kit-stays-below-features', 'src/http is what controllers share; it imports no feature and nothing from the top.',
      { path: '^src/http/' },
      { path: `${FEATURES}|${TOP}|^src/(redis|postgres)/` }),
    rule('features-do-not-reach-the-top', 'Nothing below the top imports the server, the dashboard or the composition root.',
      { path: '^src/', pathNot: TOP },
      { path: TOP }),
    rule('server-does-not-bundle-the-console', 'The console is its own app (Vite): the server only serves its built files.',
      { path: '^src/', pathNot: '^src/dashboard/console/' },
      { path: '^src/dashboard/console/' }),
    rule('unplaced', 'Every file of src/ belongs to a layer: add a new folder to the groups of this file.',
      {
        path: '^src/',
        pathNot: `^src/(core|logging|config|redis|postgres|http)/|${FEATURES}|${TOP}`,
      },
      {}),
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    exclude: { path: '^src/dashboard/console/|\\.spec\\.ts$' },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    moduleSystems: ['cjs', 'es6'],
  },
};
