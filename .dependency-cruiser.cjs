/**
 * The house's boundary rules (docs/development.md "Modules and their front doors"), checked by
 * scripts/check inside scripts/test. A module is a folder of src/modules; its front door is its
 * index.ts, the only file another module, the composition root or a job may import.
 */
/** @type {import('dependency-cruiser').IConfiguration} */
module.exports = {
  forbidden: [
    {
      name: 'routes-never-touch-the-database',
      comment: 'A route file validates, calls one service verb and shapes the reply: no db/ and no Drizzle.',
      severity: 'error',
      from: { path: '^src/modules/[^/]+/.+[.](routes|ws)[.]ts$' },
      to: { path: ['^db/', '(^|/)node_modules/drizzle-orm/'] },
    },
    {
      name: 'routes-call-verbs-not-repositories',
      comment: "A route file reaches the database only through a service verb: never a repository, not even its own module's.",
      severity: 'error',
      from: { path: '^src/modules/[^/]+/.+[.](routes|ws)[.]ts$' },
      to: { path: '[.]repository[.]ts$' },
    },
    {
      name: 'only-repositories-query',
      comment: 'Inside a module only its *.repository.ts files run Drizzle on its tables (services open transactions with db/client).',
      severity: 'error',
      from: { path: '^src/modules/', pathNot: '[.]repository[.]ts$' },
      to: { path: ['^db/schema/', '(^|/)node_modules/drizzle-orm/'], dependencyTypesNot: ['type-only'] },
    },
    {
      name: 'repositories-own-their-tables',
      comment:
        "Every table has one owning module: db/schema/<module>.ts. Only that module's repositories query it (not through the db/schema barrel); another module's tables are reached through that module's index.ts.",
      severity: 'error',
      from: { path: '^src/modules/([^/]+)/' },
      to: { path: '^db/schema/', pathNot: '^db/schema/$1[.]ts$', dependencyTypesNot: ['type-only'] },
    },
    {
      name: 'the-platform-owns-only-its-tables',
      comment: 'src/platform runs Drizzle on its own tables only (db/schema/platform.ts: idempotency keys, rate limits, job runs and leases).',
      severity: 'error',
      from: { path: '^src/platform/' },
      to: { path: '^db/schema/', pathNot: '^db/schema/platform[.]ts$', dependencyTypesNot: ['type-only'] },
    },
    {
      name: 'modules-meet-at-their-front-door',
      comment: 'Another module is imported only through its index.ts: what it exports there is all it offers.',
      severity: 'error',
      from: { path: '^src/modules/([^/]+)/' },
      to: { path: '^src/modules/', pathNot: ['^src/modules/$1/', '^src/modules/[^/]+/index[.]ts$'] },
    },
    {
      name: 'front-doors-hand-out-no-repository',
      comment:
        "A module's index.ts exports verbs and views, never its repository: its writes (and its rows) stay behind its services. dependency-cruiser sees files, not the names a file exports, so the rule is on the file: index.ts imports no *.repository.ts of its module. The modules listed in pathNot still re-export repository reads and are yet to move (docs/development.md).",
      severity: 'error',
      from: {
        path: '^src/modules/([^/]+)/index[.]ts$',
        pathNot: '^src/modules/(billing|groups|marketplaces|notifications|payments|plans|sessions|telemetry|tenants|tokens|users)/',
      },
      to: { path: '^src/modules/$1/.*[.]repository[.]ts$' },
    },
    {
      name: 'outside-code-meets-modules-at-their-front-door',
      comment: 'The composition root, jobs and scripts use a module through its index.ts too.',
      severity: 'error',
      from: { path: ['^src/[^/]+[.]ts$', '^jobs/', '^scripts/'] },
      to: { path: '^src/modules/', pathNot: '^src/modules/[^/]+/index[.]ts$' },
    },
    {
      name: 'no-cycles',
      comment: 'No import cycle anywhere in the service: between modules, inside one, or in the platform.',
      severity: 'error',
      from: { path: '^(src|db|jobs|protocol)/' },
      to: { circular: true },
    },
    {
      name: 'platform-knows-no-module',
      comment: 'src/platform is cross-cutting and has no business rules: it imports no module, no job and nothing of the composition root.',
      severity: 'error',
      from: { path: '^src/platform/' },
      to: { path: ['^src/modules/', '^jobs/', '^src/(app|server|main|deps|reactions)[.]ts$'] },
    },
    {
      name: 'platform-reads-root-types-only',
      comment: 'The platform may name the shapes of the configuration and of the event catalogue, never run them.',
      severity: 'error',
      from: { path: '^src/platform/' },
      to: { path: '^src/(config|events)[.]ts$', dependencyTypesNot: ['type-only'] },
    },
    {
      name: 'the-agent-stands-alone',
      comment:
        'The reference agent ships on its own (agent/): it imports nothing of the service and no npm package (a host has Bun alone); its frames come from protocol/ (#protocol), which the tarball ships bundled.',
      severity: 'error',
      from: { path: '^agent/' },
      to: { path: ['^src/', '^db/', '^jobs/', '^web/', '^scripts/', '(^|/)node_modules/'] },
    },
    {
      name: 'the-protocol-imports-only-typebox',
      comment:
        'protocol/ is the one source of the agent protocol, shared by the service, the agent and the tests, and bundled into the agent tarball: it imports TypeBox and itself, nothing else (no service code, no Node or Bun module).',
      severity: 'error',
      from: { path: '^protocol/' },
      to: { pathNot: ['^protocol/', '(^|/)node_modules/@sinclair/typebox/'] },
    },
    {
      name: 'jobs-and-the-root-run-no-drizzle',
      comment: 'jobs/ and the composition root (src/*.ts) compose verbs: they run no query and name no table.',
      severity: 'error',
      from: { path: ['^jobs/', '^src/[^/]+[.]ts$'] },
      to: { path: ['^db/schema/', '(^|/)node_modules/drizzle-orm/'], dependencyTypesNot: ['type-only'] },
    },
    {
      name: 'the-console-speaks-http-only',
      comment: 'web/ is a client of /api/v1: of the service it may name types (import type), never run its code, its database or its jobs.',
      severity: 'error',
      from: { path: '^web/' },
      to: { path: ['^src/', '^db/', '^jobs/', '^agent/', '^scripts/'], dependencyTypesNot: ['type-only'] },
    },
    {
      name: 'the-service-runs-no-console-or-test-code',
      comment: 'The service does not import the console sources (it bundles them by path), tests or benchmarks.',
      severity: 'error',
      from: { path: ['^src/', '^db/', '^jobs/', '^agent/', '^protocol/'] },
      to: { path: ['^web/', '^tests/', '^bench/'] },
    },
  ],
  options: {
    parser: 'swc',
    tsPreCompilationDeps: true,
    // npm modules stay in the graph (a rule can name drizzle-orm), but their own imports are not followed.
    doNotFollow: { path: 'node_modules' },
    exclude: { path: '^[.]tools' },
    tsConfig: { fileName: 'tsconfig.json' },
  },
}
