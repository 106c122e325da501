/** The sessions module's front door: browser sessions behind the session cookie. */
export { deleteUserSessions } from './sessions.repository'
export { type NewSession, resolveSession, sessionCookie, startSession } from './sessions.service'
export { sessionsRoutes } from './sessions.routes'
