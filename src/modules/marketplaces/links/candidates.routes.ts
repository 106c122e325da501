import { describe } from '../../../platform/access'
import { apiRoutes } from '../../../platform/api'
import type { Deps } from '../../../platform/context'
import { responses } from '../../../platform/schemas'
import { CandidateList, CandidatesQuery } from './candidates.model'
import { listCandidates } from './candidates.service'

/** GET /marketplaces/links/candidates (docs/marketplaces.md "Finding a server's machine"). */
export function candidatesRoutes(deps: Deps) {
  return apiRoutes('marketplaces-candidates', deps).get('/marketplaces/links/candidates', ({ verb, query }) => listCandidates({ ...verb, input: query }), {
    query: CandidatesQuery,
    response: responses({ 200: CandidateList }, [401, 403, 404, 409, 422, 503]),
    detail: describe(
      { role: 'viewer', scope: 'marketplaces:read', reach: 'server' },
      {
        tags: ['marketplaces'],
        summary: "Machines at a marketplace ranked against one server's facts",
        description:
          "Asks the marketplace live (no cache) for the account's machines and compares each with the server's own facts from its agent's registration (`known`): hostname (case-insensitive), public_ip, gpu (normalised model and count), disk (within 15 % of the server's disk_gb) and ports (the size of the range, not its bounds). A fact missing on either side never matches. `matched` counts the agreeing facts, `suggested` is true from three; strongest first, at most 512. 404 for a server that is not yours; 409 when no account is connected at the marketplace, or its stored key is rejected or lacks the host permissions; 503 with Retry-After when the marketplace cannot be reached.",
      },
    ),
  })
}
