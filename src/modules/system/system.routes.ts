import { Elysia, t } from 'elysia'
import { describe } from '../../platform/access'
import type { Deps } from '../../platform/context'
import { PROBLEM_CODE_LIST } from '../../platform/problem'
import { responses, Served } from '../../platform/schemas'
import { Health, Readiness } from './system.model'
import { problemIndexPage } from './problems.page'
import { checkReadiness, problemTypePage } from './system.service'

const Html = Served('text/html', 'HTML page')

export function systemRoutes(deps: Deps) {
  const html = (body: string) => new Response(body, { headers: { 'content-type': 'text/html; charset=utf-8', 'cache-control': 'public, max-age=3600' } })
  return new Elysia({ name: 'system' })
    .get('/healthz', () => ({ status: 'ok' as const }), {
      response: responses({ 200: Health }, []),
      detail: describe({ public: true }, { tags: ['system'], summary: 'Liveness: the process is up' }),
    })
    .get('/readyz', () => checkReadiness({ deps }), {
      response: responses({ 200: Readiness }, [503]),
      detail: describe({ public: true }, { tags: ['system'], summary: 'Readiness: database reachable and every migration applied' }),
    })
    .get('/problems', () => html(problemIndexPage(deps.config.publicUrl)), {
      response: responses({ 200: Html }, []),
      detail: describe(
        { public: true },
        {
          tags: ['system'],
          summary: 'Index of problem types',
        },
      ),
    })
    .get('/problems/:code', ({ params }) => html(problemTypePage({ deps, code: params.code })), {
      params: t.Object({ code: t.String({ maxLength: 64, examples: PROBLEM_CODE_LIST.slice(0, 3) }) }),
      response: responses({ 200: Html }, [404]),
      detail: describe({ public: true }, { tags: ['system'], summary: 'Human page for one problem type' }),
    })
}
