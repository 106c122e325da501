import type { Actor } from '../../platform/access'
import type { Deps } from '../../platform/context'
import { type McpCaller, resolveMcpToken } from './access.service'

/** What the access check learned about an AI-assistant token, kept for the handler of the same request. */
const callers = new WeakMap<Request, McpCaller>()

/** The access check's resolver for `mcp` routes (src/app.ts hands it to ensureAccess). */
export async function authenticateMcp(deps: Deps, token: string, request: Request): Promise<Actor | null> {
  const caller = await resolveMcpToken(deps, token)
  if (!caller) return null
  callers.set(request, caller)
  return caller.actor
}

export function callerOf(request: Request): McpCaller {
  const caller = callers.get(request)
  if (!caller) throw new Error('callerOf() called on a route the mcp access check did not run for')
  return caller
}
