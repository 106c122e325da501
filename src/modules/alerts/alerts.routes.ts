import { t } from 'elysia'
import { describe } from '../../platform/access'
import { apiRoutes } from '../../platform/api'
import type { Deps } from '../../platform/context'
import { responses, IdParams } from '../../platform/schemas'
import { AlertsQuery, Incident, IncidentPage, ResolveBody } from './alerts.model'
import { acknowledgeAlert, getAlert, listAlerts, resolveAlert } from './alerts.service'

const tags = ['alerts']
const read = { role: 'viewer', scope: 'notifications:read', reach: 'server' } as const
const write = { role: 'operator', scope: 'notifications:write', reach: 'server' } as const

export function alertsRoutes(deps: Deps) {
  return apiRoutes('alerts', deps)
    .get('/alerts', ({ verb, query }) => listAlerts({ ...verb, input: query }), {
      query: AlertsQuery,
      response: responses({ 200: IncidentPage }, [401, 403, 422]),
      detail: describe(read, {
        tags,
        summary: 'List incidents',
        description:
          'Newest opened first. Causes: offline, temperature, agent_error, marketplace_error, stale_link, low_balance (docs/alerts.md). Filters combine with AND; `state=unresolved` is open or acknowledged; `since` (inclusive) and `until` (exclusive) bound `opened_at`. A token with a server allowlist sees account-wide incidents and those of its servers only.',
      }),
    })
    .get('/alerts/:id', ({ verb, params }) => getAlert({ ...verb, id: params.id }), {
      params: IdParams,
      response: responses({ 200: Incident }, [401, 403, 404, 422]),
      detail: describe(read, {
        tags,
        summary: 'One incident, with the notifications its cause produced',
        description: "Another tenant's incident, or one of a server outside a token's allowlist, is 404.",
      }),
    })
    .post('/alerts/:id/acknowledge', ({ verb, params }) => acknowledgeAlert({ ...verb, id: params.id }), {
      params: IdParams,
      response: responses({ 200: Incident }, [401, 403, 404, 409, 422]),
      detail: describe(write, {
        tags,
        summary: 'Acknowledge an incident',
        description:
          'Says someone is on it: `acknowledged_at` and `acknowledged_by` are set and it stays unresolved until its cause clears or it is resolved. Acknowledging an acknowledged incident answers it unchanged; a resolved one is 409 conflict. Audited (alerts.acknowledge).',
      }),
    })
    .post('/alerts/:id/resolve', ({ verb, params, body }) => resolveAlert({ ...verb, id: params.id, input: body }), {
      params: IdParams,
      body: t.Optional(ResolveBody),
      response: responses({ 200: Incident }, [401, 403, 404, 409, 413, 415, 422]),
      detail: describe(write, {
        tags,
        summary: 'Resolve an incident by hand',
        description:
          '`note` (optional) becomes the `resolution`. A resolved incident answers unchanged. While the cause persists, a new incident opens only when it is observed again after this (docs/alerts.md). Audited (alerts.resolve).',
      }),
    })
}
