import { describe } from '../../platform/access'
import { API_PREFIX, apiRoutes } from '../../platform/api'
import type { Deps } from '../../platform/context'
import { etagOf } from '../../platform/etag'
import { NoContent, responses, IdParams } from '../../platform/schemas'
import { Rule, RuleCreate, RuleList, RulePatch } from './watchdog.model'
import { createRule, deleteRule, getRule, listRules, updateRule } from './rules.service'

const tags = ['watchdog']
// A token with a server_allowlist sees and writes the rules of its servers only; a rule on a group
// or the whole tenant is refused to it (403), one on another server is a 404 (docs/watchdog.md).
const read = { role: 'viewer', scope: 'servers:read', reach: 'server' } as const
// A rule issues reboots and restarts: writing one takes what sending those commands takes.
const write = { role: 'operator', scope: 'commands:write', reach: 'server' } as const

export function watchdogRoutes(deps: Deps) {
  return apiRoutes('watchdog', deps)
    .get('/watchdog/rules', ({ verb }) => listRules(verb), {
      response: responses({ 200: RuleList }, [401, 403]),
      detail: describe(read, {
        tags,
        summary: 'List watchdog rules with where each ladder stands',
        description:
          'The default rules (GPU missing, Xid 79, utilisation stuck) are listed first, stored off the first time the list is read: turn them on with PATCH. At most 50 rules. docs/watchdog.md.',
      }),
    })
    .post(
      '/watchdog/rules',
      async ({ verb, body, set }) => {
        const r = await createRule({ ...verb, input: body })
        set.status = 201
        set.headers.etag = etagOf(r.version)
        set.headers.location = `${API_PREFIX}/watchdog/rules/${r.id}`
        return r
      },
      {
        body: RuleCreate,
        response: responses({ 201: Rule }, [401, 403, 409, 413, 415, 422]),
        detail: describe(write, {
          tags,
          summary: 'Create a watchdog rule',
          description:
            'A condition and a ladder of steps (notify, restart_runtime, reboot; giving up and paging ends it). 422 with a pointer per problem: a field of another condition kind, max_per_day below max_per_hour, a server or group not of this tenant, both server_id and group_id. 409 at 50 rules.',
        }),
      },
    )
    .get(
      '/watchdog/rules/:id',
      async ({ verb, params, set }) => {
        const r = await getRule({ ...verb, id: params.id })
        set.headers.etag = etagOf(r.version)
        return r
      },
      {
        params: IdParams,
        response: responses({ 200: Rule }, [401, 403, 404, 422]),
        detail: describe(read, { tags, summary: 'A watchdog rule, its ladder on each server and its recent steps', description: 'ETag is the version.' }),
      },
    )
    .patch(
      '/watchdog/rules/:id',
      async ({ verb, request, params, body, set }) => {
        const r = await updateRule({ ...verb, id: params.id, ifMatch: request.headers.get('if-match'), input: body })
        set.headers.etag = etagOf(r.version)
        return r
      },
      {
        params: IdParams,
        body: RulePatch,
        response: responses({ 200: Rule }, [401, 403, 404, 409, 412, 413, 415, 422]),
        detail: describe(write, {
          tags,
          summary: 'Turn a watchdog rule on or off, or change it',
          description:
            'If-Match optional; 412 when stale. Turning it off, or changing its condition, ladder or servers, starts every ladder again from its first step.',
        }),
      },
    )
    .delete(
      '/watchdog/rules/:id',
      async ({ verb, request, params, set }) => {
        await deleteRule({ ...verb, id: params.id, ifMatch: request.headers.get('if-match') })
        set.status = 204
        return null
      },
      {
        params: IdParams,
        response: responses({ 204: NoContent }, [401, 403, 404, 409, 412, 422]),
        detail: describe(write, {
          tags,
          summary: 'Delete a watchdog rule',
          description: 'A default rule cannot be deleted (409): turn it off instead. If-Match optional; 412 when stale.',
        }),
      },
    )
}
