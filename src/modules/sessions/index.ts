/** The sessions module's front door: browser sessions behind the session cookie. */
export { deleteUserSessions } from './sessions.repository'
export { sessionCookie } from './sessions.cookie'
export { keptSession, type NewSession, resolveSession, startSession } from './sessions.service'
export { sessionsRoutes } from './sessions.routes'
