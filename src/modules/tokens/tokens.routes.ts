import { t } from 'elysia'
import { describe } from '../../platform/access'
import { apiRoutes } from '../../platform/api'
import type { Deps } from '../../platform/context'
import { idempotent } from '../../platform/idempotency'
import { NoContent, responses } from '../../platform/schemas'
import { createInitToken } from './init-tokens.service'
import { InitCreate, InitCreated, PatCreate, PatCreated, PatPage, PatQuery } from './tokens.model'
import { createPat, listPats, revokePat } from './tokens.service'

const tags = ['tokens']

export function tokensRoutes(deps: Deps) {
  return apiRoutes('tokens', deps)
    .post(
      '/tokens',
      async ({ verb, body, set }) => {
        const out = await createPat({ ...verb, input: body })
        set.status = 201
        set.headers['cache-control'] = 'no-store'
        return out
      },
      {
        beforeHandle: idempotent(deps),
        body: PatCreate,
        headers: t.Object({ 'idempotency-key': t.Optional(t.String({ minLength: 1, maxLength: 128 })) }),
        response: responses({ 201: PatCreated }, [401, 403, 409, 413, 415, 422, 429]),
        detail: describe(
          { role: 'viewer', cookieOnly: true, requiresPlan: true, reach: 'tenant' },
          {
            tags,
            summary: 'Mint a personal access token',
            description:
              'The plaintext (`gpuhq_pat_…`) is returned once with Cache-Control: no-store and never again. Use it as `Authorization: Bearer <token>`. Takes Idempotency-Key (a replay returns the same token; the stored answer is encrypted).',
          },
        ),
      },
    )
    .get('/tokens', ({ verb, query }) => listPats({ ...verb, input: query }), {
      query: PatQuery,
      response: responses({ 200: PatPage }, [401, 403, 422]),
      detail: describe(
        { role: 'viewer', cookieOnly: true, reach: 'tenant' },
        {
          tags,
          summary: 'List personal access tokens',
          description: 'Your own tokens; owners and admins see every token of the tenant. Newest first; revoked tokens are gone.',
        },
      ),
    })
    .delete(
      '/tokens/:id',
      async ({ verb, params, set }) => {
        await revokePat({ ...verb, id: params.id.toLowerCase() })
        set.status = 204
        return null
      },
      {
        params: t.Object({ id: t.String({ format: 'uuid' }) }),
        response: responses({ 204: NoContent }, [401, 403, 404, 422]),
        detail: describe(
          { role: 'viewer', cookieOnly: true, reach: 'tenant' },
          {
            tags,
            summary: 'Revoke a personal access token',
            description: 'Takes effect on the next request. Owners and admins may revoke any token of the tenant.',
          },
        ),
      },
    )
    .post(
      '/tokens/init',
      async ({ verb, body, set }) => {
        const out = await createInitToken({ ...verb, input: body })
        set.status = 201
        set.headers['cache-control'] = 'no-store'
        return out
      },
      {
        beforeHandle: idempotent(deps),
        body: InitCreate,
        headers: t.Object({ 'idempotency-key': t.Optional(t.String({ minLength: 1, maxLength: 128 })) }),
        response: responses({ 201: InitCreated }, [401, 403, 404, 409, 413, 415, 422, 429]),
        detail: describe(
          { role: 'operator', scope: 'servers:write', denyFrozen: true, requiresPlan: true, reach: 'server' },
          {
            tags,
            summary: 'Mint a one-time agent init token',
            description:
              "Lifetime at most one hour (`expires_in_s` over 3600 → 422). Bound to `server_id` it re-enrols that server and is always allowed; unbound it may add a server, so it is refused with 409 server_limit_reached once enrolled servers plus unused unbound tokens reach the plan's fleet.servers.max. The plaintext is shown once; pass it to the agent on standard input or in a file, never as a command-line argument.",
          },
        ),
      },
    )
}
