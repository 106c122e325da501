import { Elysia } from 'elysia'
import { actorOf, describe } from '../../platform/access'
import type { Deps } from '../../platform/context'
import { responses, NoContent } from '../../platform/schemas'
import { signIn } from '../accounts/signin.service'
import { SignIn } from '../accounts/accounts.model'
import { callerOf } from '../accounts/accounts.routes'
import { Me } from '../users/users.model'
import { meView } from '../users/users.service'
import { clearedSessionCookie, endSession, sessionCookie } from './sessions.service'

const tags = ['auth']

export function sessionsRoutes(deps: Deps) {
  return new Elysia({ name: 'sessions', prefix: '/api/v1/auth' })
    .post(
      '/sessions',
      async ({ body, request, set }) => {
        const { user, session } = await signIn({ deps, input: body, caller: callerOf(request) })
        set.status = 201
        set.headers['set-cookie'] = sessionCookie(session)
        set.headers['cache-control'] = 'no-store'
        return meView(user)
      },
      {
        body: SignIn,
        response: responses({ 201: Me }, [401, 403, 413, 415, 422, 429]),
        detail: describe(
          { public: true },
          {
            tags,
            summary: 'Sign in: create a browser session',
            description:
              'Sets the `__Host-gpuhq_session` cookie. A wrong email or password answers the same 401. After 5 failures from one network on one account, that network waits (429 with Retry-After) with a doubling delay up to 15 minutes.',
          },
        ),
      },
    )
    .delete(
      '/sessions/current',
      ({ request, set }) => {
        endSession({ deps, sessionId: actorOf(request).sessionId! })
        set.status = 204
        set.headers['set-cookie'] = clearedSessionCookie()
        return null
      },
      {
        response: responses({ 204: NoContent }, [401, 403]),
        detail: describe({ role: 'viewer', cookieOnly: true }, { tags, summary: 'Sign out: revoke the current session' }),
      },
    )
}
