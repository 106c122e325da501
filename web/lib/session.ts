import { signal } from '@preact/signals'
import { ApiError, get, onSessionEnded, request } from './api'
import type { Me } from './api-types'
import { setDisplayZone } from './format'

export type { Me }
export type Role = Me['role']

/** undefined: not known yet; null: signed out. */
export const me = signal<Me | null | undefined>(undefined)
// Dates are shown in the member's profile time zone (Settings), as soon as the profile is known.
me.subscribe((m) => setDisplayZone(m?.timezone))
/** Why the sign-in page is shown, when it is not the first visit (a session that ended). */
export const signedOutReason = signal<string | null>(null)

onSessionEnded(() => {
  if (me.value) signedOutReason.value = 'Your session ended. Sign in again to go on.'
  me.value = null
})

export async function loadMe(): Promise<void> {
  try {
    me.value = await get<Me>('/me')
  } catch (e) {
    if (e instanceof ApiError && e.status === 401) me.value = null
    else throw e
  }
}

const LOOPBACK = /^(localhost|127(\.\d{1,3}){3}|\[::1\])$/

/** Why a session the service started is not in this browser: the words, and the fix. */
function cookieDropped(): string {
  const here = `${location.protocol}//${location.host}`
  if (location.protocol === 'http:' && !LOOPBACK.test(location.hostname))
    return (
      `gpuhq accepted the sign-in, but this browser did not keep the session cookie, so you are not signed in. ` +
      `The cookie (__Host-gpuhq_session) is Secure: browsers keep it only over HTTPS, or over plain http on localhost, and this page is at ${here}. ` +
      `To fix it, put gpuhq behind HTTPS (a TLS reverse proxy such as Caddy, see docs/operations.md "HTTPS") and set PUBLIC_URL to its https:// address; ` +
      `or, on the machine gpuhq runs on, open http://localhost:${location.port || '80'}/.`
    )
  return `gpuhq accepted the sign-in, but this browser did not keep the session cookie, so you are not signed in. Allow cookies for ${here} and sign in again.`
}

/**
 * After a sign-in the service answered 201: checks that the session cookie stuck (GET /me with it).
 * A browser drops the Secure cookie over plain http on any host but localhost, and then the sign-in
 * would seem to work and end at once; here it fails with the reason and the fix instead.
 */
export async function sessionStarted(profile: Me): Promise<void> {
  try {
    await get<Me>('/me')
  } catch (e) {
    if (e instanceof ApiError && e.status === 401)
      throw new ApiError(401, { title: 'Session cookie not kept', status: 401, code: 'session_cookie_dropped', detail: cookieDropped() })
    throw e
  }
  signedIn(profile)
}

export function signedIn(profile: Me): void {
  signedOutReason.value = null
  me.value = profile
}

export async function signOut(): Promise<void> {
  try {
    await request('DELETE', '/auth/sessions/current')
  } finally {
    signedOutReason.value = 'You signed out.'
    me.value = null
  }
}

const RANK: Record<Role, number> = { viewer: 0, operator: 1, admin: 2, owner: 3 }
/** Whether the member may do what needs `role` (the service decides; this only hides buttons that would be refused). */
export const can = (role: Role) => RANK[me.value?.role ?? 'viewer'] >= RANK[role]
