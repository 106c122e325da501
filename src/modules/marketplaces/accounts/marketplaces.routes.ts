import { t } from 'elysia'
import { describe, type Actor } from '../../../platform/access'
import { apiRoutes } from '../../../platform/api'
import type { Deps } from '../../../platform/context'
import { idempotent } from '../../../platform/idempotency'
import { NoContent, PageQuery, responses } from '../../../platform/schemas'
import { connectAccount, disconnectAccount, listAccounts } from './accounts.service'
import { ConnectBody, Connection, ConnectionList, MarketplaceParam, OperationPage } from '../marketplaces.model'
import { listOperations } from '../operations/operations.service'

const tags = ['marketplaces']

/**
 * Connected marketplace accounts and the operations log (docs/marketplaces.md). `visibleServerId`
 * is fleet's check that a server is the caller's (handed in by the composition root).
 */
export function marketplacesRoutes(deps: Deps, visibleServerId: (deps: Deps, actor: Actor, id: string) => Promise<string>) {
  return apiRoutes('marketplaces', deps)
    .put('/marketplaces/:marketplace', ({ verb, params, body }) => connectAccount({ ...verb, marketplace: params.marketplace, input: body }), {
      beforeHandle: idempotent(deps),
      params: MarketplaceParam,
      body: ConnectBody,
      response: responses({ 200: Connection }, [401, 403, 413, 415, 422, 503]),
      detail: describe(
        { role: 'admin', scope: 'marketplaces:write', reach: 'tenant' },
        {
          tags,
          summary: 'Connect an account at a marketplace, or replace its key',
          description:
            'The key is checked with the marketplace before it is stored, sealed at rest and never shown again. A key the marketplace rejects → 422 with errors[0] {path: "/api_key", code: "rejected_by_marketplace"}; a key it accepts but that lacks the host permissions (or needs a two-factor session) → 422 with code "insufficient_permissions"; a marketplace that cannot be reached → 503 with Retry-After. None of them stores the key or changes the stored connection. Re-sending a key replaces it and clears the last failure without disconnecting. Takes Idempotency-Key.',
        },
      ),
    })
    .get('/marketplaces/accounts', ({ verb }) => listAccounts(verb), {
      response: responses({ 200: ConnectionList }, [401, 403]),
      detail: describe({ role: 'viewer', scope: 'marketplaces:read', reach: 'tenant' }, { tags, summary: 'Connected marketplace accounts' }),
    })
    .delete(
      '/marketplaces/:marketplace',
      async ({ verb, params, set }) => {
        await disconnectAccount({ ...verb, marketplace: params.marketplace })
        set.status = 204
        return null
      },
      {
        params: MarketplaceParam,
        response: responses({ 204: NoContent }, [401, 403, 404, 422]),
        detail: describe(
          { role: 'admin', scope: 'marketplaces:write', reach: 'tenant' },
          {
            tags,
            summary: 'Disconnect a marketplace account',
            description: 'Forgets the key; the links to its machines go with it. 404 when no account is connected there.',
          },
        ),
      },
    )
    .get('/marketplaces/operations', ({ verb, query }) => listOperations({ ...verb, input: query }), {
      query: t.Object({ ...PageQuery }),
      response: responses({ 200: OperationPage }, [401, 403, 422]),
      detail: describe(
        { role: 'viewer', scope: 'marketplaces:read', reach: 'tenant' },
        {
          tags,
          summary: 'Recent marketplace operations, fleet-wide',
          description: 'Every call gpuhq made to a marketplace for this tenant, newest first; never the key.',
        },
      ),
    })
    .get(
      '/servers/:id/operations',
      async ({ verb, params, query }) => listOperations({ ...verb, serverId: await visibleServerId(deps, verb.actor, params.id), input: query }),
      {
        params: t.Object({ id: t.String({ format: 'uuid' }) }),
        query: t.Object({ ...PageQuery }),
        response: responses({ 200: OperationPage }, [401, 403, 404, 422]),
        detail: describe(
          { role: 'viewer', scope: 'marketplaces:read', reach: 'server', serverParam: 'id' },
          {
            tags,
            summary: 'Recent marketplace operations for one server',
            description: 'Calls made for this server (links, offers, maintenance), newest first.',
          },
        ),
      },
    )
}
