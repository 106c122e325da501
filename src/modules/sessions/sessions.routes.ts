import { describe } from '../../platform/access'
import { apiRoutes } from '../../platform/api'
import type { Deps } from '../../platform/context'
import { NoContent, responses } from '../../platform/schemas'
import { clearedSessionCookie } from './sessions.cookie'
import { endSession } from './sessions.service'

const tags = ['auth']

/** Sign-out. Signing in (POST /auth/sessions) checks a password, so it lives with the accounts (accounts.routes.ts). */
export function sessionsRoutes(deps: Deps) {
  return apiRoutes('sessions', deps, '/auth').delete(
    '/sessions/current',
    async ({ verb, set }) => {
      await endSession({ deps, sessionId: verb.actor.sessionId! })
      set.status = 204
      set.headers['set-cookie'] = clearedSessionCookie()
      return null
    },
    {
      response: responses({ 204: NoContent }, [401, 403]),
      detail: describe({ role: 'viewer', cookieOnly: true, reach: 'none' }, { tags, summary: 'Sign out: revoke the current session' }),
    },
  )
}
