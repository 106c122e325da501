import { withTransaction } from '../../../db/client'
import type { Deps } from '../../platform/context'
import { deleteAuthLeftovers } from './accounts.repository'

const DAY_US = 86_400_000_000

/** Forgets auth leftovers a day after they stopped mattering (the `accounts.gc` job). */
export async function collectAuthLeftovers(deps: Deps): Promise<string> {
  const n = await withTransaction(deps.db, (tx) => deleteAuthLeftovers(tx, deps.clock.nowUs() - DAY_US))
  return `removed ${n} expired codes, tickets, captcha tokens and sign-in failure records`
}
