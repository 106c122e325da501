import { Elysia } from 'elysia'
import { openapi } from '@elysiajs/openapi'
import type { Deps } from './platform/context'
import type { JobRunner } from './platform/jobs'
import { createMethodIndex, platform } from './platform/http'
import { ProblemSchema } from './platform/schemas'
import { systemRoutes } from './modules/system/system.routes'
import { testingRoutes } from './modules/testing/testing.routes'

export const API_PREFIX = '/api/v1'

/**
 * The HTTP application: platform conventions first (ids, body rules, problem documents), then the
 * OpenAPI document, then every module's routes. No listening here; src/server.ts does that.
 */
export function createApp(deps: Deps, runner: JobRunner) {
  let allowedMethods: (path: string) => string[] = () => []
  const app = new Elysia({ normalize: false })
    .use(platform(deps, { allowedMethods: (p) => allowedMethods(p) }))
    .model({ Problem: ProblemSchema })
    .use(
      openapi({
        path: `${API_PREFIX}/docs`,
        specPath: `${API_PREFIX}/openapi.json`,
        provider: 'scalar',
        documentation: {
          info: {
            title: 'gpuhq API',
            version: '1.0.0',
            description:
              'Fleet, billing and access service for owners of GPU servers. Every error is an RFC 9457 problem document (application/problem+json) whose `type` is `' +
              `${deps.config.publicUrl}/problems/<code>` +
              '`. Money is a decimal string, timestamps are RFC 3339 UTC with microseconds.',
          },
          servers: [{ url: deps.config.publicUrl }],
          tags: [
            { name: 'system', description: 'Health, readiness and problem pages' },
            { name: 'test clock', description: 'Only with TEST_CLOCK=true (never in production)' },
          ],
        },
      }),
    )
    .use(systemRoutes(deps))

  if (deps.config.testClock) app.use(testingRoutes(deps, runner))

  allowedMethods = createMethodIndex(app.routes)
  return app
}

export type App = ReturnType<typeof createApp>
