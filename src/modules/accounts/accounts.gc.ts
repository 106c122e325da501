import { lt, or, isNotNull, and } from 'drizzle-orm'
import { captchaTokens, emailCodes, signinFailures, tickets } from '../../../db/schema'
import { withTransaction, changesOf } from '../../../db/client'
import type { Deps } from '../../platform/context'

/** Forgets auth leftovers a day after they stopped mattering (the `accounts.gc` job). */
export function collectAuthLeftovers(deps: Deps): string {
  const dayAgo = deps.clock.nowUs() - 86_400_000_000
  const n = withTransaction(deps.db, (tx) => {
    return (
      changesOf(tx.delete(emailCodes).where(lt(emailCodes.expiresAt, dayAgo)).run()) +
      changesOf(
        tx
          .delete(tickets)
          .where(or(lt(tickets.expiresAt, dayAgo), and(isNotNull(tickets.consumedAt), lt(tickets.consumedAt, dayAgo))))
          .run(),
      ) +
      changesOf(tx.delete(captchaTokens).where(lt(captchaTokens.usedAt, dayAgo)).run()) +
      changesOf(
        tx
          .delete(signinFailures)
          .where(and(lt(signinFailures.updatedAt, dayAgo), lt(signinFailures.blockedUntil, dayAgo)))
          .run(),
      )
    )
  })
  return `removed ${n} expired codes, tickets, captcha tokens and sign-in failure records`
}
