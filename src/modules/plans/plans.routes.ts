import { Type } from '@sinclair/typebox'
import { describe } from '../../platform/access'
import { apiRoutes } from '../../platform/api'
import type { Deps } from '../../platform/context'
import { responses } from '../../platform/schemas'
import { Plan } from './plans.model'
import { listPlanViews } from './plans.service'

export function plansRoutes(deps: Deps) {
  return apiRoutes('plans', deps).get('/plans', () => listPlanViews({ deps }), {
    response: responses({ 200: Type.Object({ items: Type.Array(Plan) }) }, []),
    detail: describe({ public: true }, { tags: ['plans'], summary: 'Public plan catalogue with its capability matrix' }),
  })
}
