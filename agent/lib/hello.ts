import type { HostFactsBody } from '#protocol'
import type { Credential } from './credential'
import { apiUrl, describeNetworkError, postJson, readProblem } from './http'
import type { Logger } from './log'
import { AGENT_VERSION, EXIT } from './version'

/**
 * POST /agent/hello once at start: tells the service the agent is alive and reachable over HTTPS
 * (it never makes the server online; only session heartbeats do). Returns an exit code when
 * running on cannot help (credential refused, agent too old), otherwise null.
 */
export async function httpsHello(cred: Credential, hello: HostFactsBody, log: Logger): Promise<number | null> {
  const url = apiUrl(cred.url, '/agent/hello')
  try {
    const res = await postJson(url, hello, { authorization: `Bearer ${cred.agent_token}` }, 15_000)
    if (res.status === 204 || res.status === 200) return null
    const p = await readProblem(res)
    if (res.status === 401) {
      log.error(REVOKED)
      return EXIT.config
    }
    if (res.status === 426) {
      log.error(TOO_OLD, { detail: p.detail })
      return EXIT.config
    }
    log.warn('HTTPS hello was not accepted; continuing with the WebSocket session', { status: res.status, code: p.code, detail: p.detail })
  } catch (err) {
    log.warn(`HTTPS hello failed: ${describeNetworkError(err, url)}; the session will keep retrying`)
  }
  return null
}

export const REVOKED =
  "the service refused this agent's credential (revoked, replaced by a newer enrolment of this server, or the server was decommissioned); enrol again with a new init token"
export const TOO_OLD = `the service no longer accepts agent version ${AGENT_VERSION}; install a newer agent`
