import type { Deps } from '../../platform/context'
import { ipPrefix } from '../../platform/ip'
import { enforceRateLimit } from '../../platform/rate-limit'

/**
 * The public auth operations' rate limits (the numbers are gpuhq's own; docs/auth.md "The numbers"
 * lists them). Counted per client network (/24, /64) and per keyed hash of the email, across
 * processes.
 */
export const AUTH_LIMITS = {
  start: { perNetwork: [20, 3600], perEmail: [10, 3600] },
  verify: { perNetwork: [30, 600], perEmail: [10, 600] },
  complete: { perNetwork: [20, 3600] },
  signin: { perNetwork: [60, 600] },
} as const

export async function limitByNetwork(deps: Deps, name: string, ip: string, [limit, period]: readonly [number, number]): Promise<void> {
  await enforceRateLimit(deps.db, deps.clock, `${name}:net:${ipPrefix(ip)}`, limit, period)
}

export async function limitByEmail(deps: Deps, name: string, emailHash: string, [limit, period]: readonly [number, number]): Promise<void> {
  await enforceRateLimit(deps.db, deps.clock, `${name}:email:${emailHash}`, limit, period)
}
