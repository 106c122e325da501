import { SESSION_COOKIE } from '../../platform/access'
import type { NewSession } from './sessions.service'

/** The Set-Cookie values the routes send: the session's token, or its removal at sign-out. */
export function sessionCookie(session: NewSession): string {
  return `${SESSION_COOKIE}=${session.token}; Path=/; Secure; HttpOnly; SameSite=Lax; Max-Age=${session.maxAgeSeconds}`
}

export function clearedSessionCookie(): string {
  return `${SESSION_COOKIE}=; Path=/; Secure; HttpOnly; SameSite=Lax; Max-Age=0`
}
