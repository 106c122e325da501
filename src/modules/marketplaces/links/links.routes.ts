import { describe } from '../../../platform/access'
import { apiRoutes } from '../../../platform/api'
import type { Deps } from '../../../platform/context'
import { idempotent } from '../../../platform/idempotency'
import { NoContent, responses } from '../../../platform/schemas'
import { createLink, listLinks, unlink } from './links.service'
import { Link, LinkCreate, LinkList, LinkParams } from '../marketplaces.model'

const tags = ['marketplaces']

/** Server-to-machine links (docs/marketplaces.md "Linking a server to a machine"). */
export function linksRoutes(deps: Deps) {
  return apiRoutes('marketplace-links', deps)
    .post(
      '/marketplaces/links',
      async ({ verb, body, set }) => {
        const link = await createLink({ ...verb, input: body })
        set.status = 201
        return link
      },
      {
        beforeHandle: idempotent(deps),
        body: LinkCreate,
        response: responses({ 201: Link }, [401, 403, 404, 409, 413, 415, 422, 503]),
        detail: describe(
          { role: 'admin', scope: 'marketplaces:write', reach: 'server' },
          {
            tags,
            summary: 'Link one of your servers to a machine at a marketplace',
            description:
              'Fleet configuration of the marketplaces area: needs the admin role (a token: marketplaces:write), like connecting an account. The machine is looked up in the connected account\'s live listing and the link\'s `remote` (and `marketplace_b`) projection is taken from it. A server that is not yours (or outside a token\'s allowlist) → 404; no account connected at the marketplace, or its stored key was rejected → 409; the server already linked there → 409; a machine the listing does not show → 422 with errors[0] {path: "/external_machine_id", code: "not_found_on_marketplace"}; the marketplace unreachable → 503 with Retry-After. A machine already linked to another of your servers is linked again with state `conflict`, and the other link becomes `conflict` too; deleting one of them returns the other to `linked`. `electricity_usd_per_gpu_hour` is null here (the list computes it). Takes Idempotency-Key.',
          },
        ),
      },
    )
    .get('/marketplaces/links', ({ verb }) => listLinks(verb), {
      response: responses({ 200: LinkList }, [401, 403]),
      detail: describe(
        { role: 'viewer', scope: 'marketplaces:read', reach: 'server' },
        {
          tags,
          summary: 'Every server-to-machine link (at most 512)',
          description:
            "With `electricity_usd_per_gpu_hour`: the server's tariff × its average measured GPU power over the last 7 days ÷ its card count; null without a tariff, power measurements or a card count. A token sees the links of the servers in its allowlist.",
        },
      ),
    })
    .delete(
      '/marketplaces/links/:server_id/:marketplace',
      async ({ verb, params, set }) => {
        await unlink({ ...verb, serverId: params.server_id, marketplace: params.marketplace })
        set.status = 204
        return null
      },
      {
        params: LinkParams,
        response: responses({ 204: NoContent }, [401, 403, 404, 422]),
        detail: describe(
          { role: 'admin', scope: 'marketplaces:write', reach: 'server' },
          { tags, summary: 'Remove a server-to-machine link', description: 'Nothing changes at the marketplace. 404 when the server has no link there.' },
        ),
      },
    )
}
