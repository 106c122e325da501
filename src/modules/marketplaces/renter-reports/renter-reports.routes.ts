import { t } from 'elysia'
import { describe, type Actor } from '../../../platform/access'
import { apiRoutes } from '../../../platform/api'
import type { Deps } from '../../../platform/context'
import { PageQuery, responses } from '../../../platform/schemas'
import { RenterReportPage } from './renter-reports.model'
import { listRenterReports } from './renter-reports.service'

/** A server's renter reports (docs/marketplaces.md "Renter reports"); `visibleServerId` is fleet's check that the server is the caller's. */
export function renterReportsRoutes(deps: Deps, visibleServerId: (deps: Deps, actor: Actor, id: string) => Promise<string>) {
  return apiRoutes('renter-reports', deps).get(
    '/servers/:id/renter-reports',
    async ({ verb, params, query }) => listRenterReports({ ...verb, serverId: await visibleServerId(deps, verb.actor, params.id), input: query }),
    {
      params: t.Object({ id: t.String({ format: 'uuid' }) }),
      query: t.Object({ ...PageQuery }),
      response: responses({ 200: RenterReportPage }, [401, 403, 404, 422]),
      detail: describe(
        { role: 'viewer', scope: 'marketplaces:read', reach: 'server', serverParam: 'id' },
        {
          tags: ['marketplaces'],
          summary: "Renter reports on a server's marketplace machine",
          description:
            'What renters reported about the machine linked to this server (marketplace_a only: Clore has no reports), as the marketplaces.sync job read them, newest first. Each report is kept once; a new one opened an alert incident (kind renter_report). Another tenant’s server, or one outside a token’s allowlist, is 404.',
        },
      ),
    },
  )
}
