import { describe } from '../../platform/access'
import { apiRoutes } from '../../platform/api'
import type { Deps } from '../../platform/context'
import { requestState } from '../../platform/http'
import { PASSWORD_MAX, PASSWORD_MIN } from '../../platform/passwords'
import { responses } from '../../platform/schemas'
import { sessionCookie } from '../sessions'
import { Me, meView } from '../users'
import { AuthConfig, CodeCheck, CodeSent, ResetStart, SetPassword, SignIn, SignupStart, Ticket } from './accounts.model'
import { CODE_MAX_ATTEMPTS, CODE_TTL_SECONDS, RESEND_COOLDOWN_SECONDS } from './codes.service'
import { completeReset, startReset, verifyReset } from './reset.service'
import { signIn } from './signin.service'
import { completeSignup, startSignup, verifySignup } from './signup.service'

const tags = ['auth']
const signup = { public: true, requires: 'signup' } as const
const open = { public: true } as const

function callerOf(request: Request) {
  return { ip: requestState(request).ip, userAgent: request.headers.get('user-agent') }
}

export function accountsRoutes(deps: Deps) {
  return apiRoutes('accounts', deps, '/auth')
    .onAfterHandle(({ set }) => {
      set.headers['cache-control'] = 'no-store'
    })
    .get(
      '/config',
      () => ({
        signup_enabled: deps.config.signupEnabled,
        captcha: {
          enabled: deps.config.captcha.secret !== null,
          provider: deps.config.captcha.secret ? ('turnstile' as const) : null,
          site_key: deps.config.captcha.siteKey,
        },
        password: { min_length: PASSWORD_MIN, max_length: PASSWORD_MAX },
        code: { length: 6, ttl_seconds: CODE_TTL_SECONDS, max_attempts: CODE_MAX_ATTEMPTS, resend_cooldown_seconds: RESEND_COOLDOWN_SECONDS },
        ...(deps.config.demoSignIn ? { demo: deps.config.demoSignIn } : {}),
      }),
      { response: responses({ 200: AuthConfig }, []), detail: describe(open, { tags, summary: 'Public sign-in configuration' }) },
    )
    .post(
      '/signup/start',
      async ({ body, request, set }) => {
        const out = await startSignup({ deps, input: body, caller: callerOf(request) })
        set.status = 202
        return out
      },
      {
        body: SignupStart,
        response: responses({ 202: CodeSent }, [403, 404, 413, 415, 422, 429, 503]),
        detail: describe(signup, {
          tags,
          summary: 'Start signup: email a 6-digit code',
          description:
            'Always 202 with the cooldown, whether or not the email already has an account (that address gets an "already have an account" email instead). 429 with Retry-After inside the 60 s cooldown. 404 for every request while signup is disabled.',
        }),
      },
    )
    .post('/signup/verify', ({ body, request }) => verifySignup({ deps, input: body, caller: callerOf(request) }), {
      body: CodeCheck,
      response: responses({ 200: Ticket }, [401, 404, 413, 415, 422, 429]),
      detail: describe(signup, {
        tags,
        summary: 'Verify the signup code for a ticket',
        description: 'A wrong, expired, exhausted or never-issued code answers the same 401.',
      }),
    })
    .post(
      '/signup/complete',
      async ({ body, request, set }) => {
        const { user, session } = await completeSignup({ deps, input: body, caller: callerOf(request) })
        set.status = 201
        set.headers['set-cookie'] = sessionCookie(session)
        return meView(user)
      },
      {
        body: SetPassword,
        response: responses({ 201: Me }, [401, 404, 409, 413, 415, 422, 429]),
        detail: describe(signup, {
          tags,
          summary: 'Complete signup: set the password, create the account',
          description: 'Consumes the signup ticket; creates the tenant (free plan), the user as owner and a browser session (Set-Cookie).',
        }),
      },
    )
    .post(
      '/password-reset/start',
      async ({ body, request, set }) => {
        const out = await startReset({ deps, input: body, caller: callerOf(request) })
        set.status = 202
        return out
      },
      {
        body: ResetStart,
        response: responses({ 202: CodeSent }, [403, 413, 415, 422, 429, 503]),
        detail: describe(open, {
          tags,
          summary: 'Start a password reset',
          description: 'Always 202; an unknown email gets no mail but the same answer and cooldown.',
        }),
      },
    )
    .post('/password-reset/verify', ({ body, request }) => verifyReset({ deps, input: body, caller: callerOf(request) }), {
      body: CodeCheck,
      response: responses({ 200: Ticket }, [401, 413, 415, 422, 429]),
      detail: describe(open, { tags, summary: 'Verify a reset code for a ticket' }),
    })
    .post(
      '/password-reset/complete',
      async ({ body, request, set }) => {
        const { user, session } = await completeReset({ deps, input: body, caller: callerOf(request) })
        set.headers['set-cookie'] = sessionCookie(session)
        return meView(user)
      },
      {
        body: SetPassword,
        response: responses({ 200: Me }, [401, 409, 413, 415, 422, 429]),
        detail: describe(open, {
          tags,
          summary: 'Set a new password and sign in',
          description: 'Ends every other session of the user and starts a new one (Set-Cookie).',
        }),
      },
    )
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
        detail: describe(open, {
          tags,
          summary: 'Sign in: create a browser session',
          description:
            'Sets the `__Host-gpuhq_session` cookie. A wrong email or password answers the same 401. After 5 failures from one network on one account, that network waits (429 with Retry-After) with a doubling delay up to 15 minutes.',
        }),
      },
    )
}
