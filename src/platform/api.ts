import { Elysia } from 'elysia'
import type { Deps } from './context'
import { actorOf, type Actor } from './actor'
import { auditContextOf, type AuditContext } from './audit-context'

/** Where the JSON API lives: every operation's path starts here (the console, docs and agent downloads do not). */
export const API_PREFIX = '/api/v1'

/**
 * What a service verb runs with on behalf of a request: `deps`, who acts and the request's audit
 * facts. A handler passes it on whole (`listGroups(verb)`) or spread with its own arguments
 * (`createGroup({ ...verb, input: body })`).
 *
 * `actor` and `audit` are read on demand, and as strictly as `actorOf(request)`: on a route without
 * authentication (a public one) reading either throws, so a public route cannot act as nobody.
 * Spreading the context reads both.
 */
export type Verb = { readonly deps: Deps; readonly actor: Actor; readonly audit: AuditContext }

function verbOf(deps: Deps, request: Request): Verb {
  let audit: AuditContext | undefined
  return {
    deps,
    get actor() {
      return actorOf(request)
    },
    get audit() {
      return (audit ??= auditContextOf(request))
    },
  }
}

/**
 * The routes of one module under /api/v1 (`under` adds a segment: '/auth'), each handler given its
 * verb context as `verb`. It is resolved after the access check (src/platform/http.ts runs that in
 * parse and transform; a resolve runs after validation, just before the handler), once per request.
 */
export function apiRoutes<const Under extends string = ''>(name: string, deps: Deps, under?: Under) {
  return new Elysia({ name, prefix: `${API_PREFIX}${under ?? ''}` as `${typeof API_PREFIX}${Under}` }).resolve(({ request }) => ({
    verb: verbOf(deps, request),
  }))
}
