import type { Static } from '@sinclair/typebox'
import { withTransaction } from '../../../db/client'
import { requireCaptcha } from './accounts.captcha'
import type { Deps } from '../../platform/context'
import { ipPrefix } from '../../platform/ip'
import { burnPasswordCheck, verifyPassword } from '../../platform/passwords'
import { recordMemberEvent } from '../audit'
import { startSession, type NewSession } from '../sessions'
import { findUserByEmail, type UserRow } from '../users'
import { AccountErrors } from './accounts.errors'
import type { SignIn } from './accounts.model'
import { clearSigninFailures, findSigninFailures, saveSigninFailures } from './accounts.repository'
import { emailKey, normalizeEmail } from './codes.service'
import { AUTH_LIMITS, limitByNetwork } from './limits'
import type { Caller } from './signup.service'

/**
 * Sign-in. Failures are counted per (account, client network): after 5 in a row that network
 * waits 1 s, then 2 s, 4 s … up to 15 minutes before its next try on that account. The owner
 * signing in from anywhere else is never blocked by someone else's guessing. An unknown email does
 * the same argon2 work and gets the same 401 as a wrong password.
 */
const FREE_FAILURES = 5
const MAX_BLOCK_SECONDS = 900

function blockSeconds(failures: number): number {
  return failures < FREE_FAILURES ? 0 : Math.min(MAX_BLOCK_SECONDS, 2 ** (failures - FREE_FAILURES))
}

export async function signIn({
  deps,
  input,
  caller,
}: {
  deps: Deps
  input: Static<typeof SignIn>
  caller: Caller
}): Promise<{ user: UserRow; session: NewSession }> {
  const email = normalizeEmail(input.email)
  await limitByNetwork(deps, 'signin', caller.ip, AUTH_LIMITS.signin.perNetwork)
  await requireCaptcha(deps, input.captcha_token, caller.ip)
  const key = `${emailKey(deps, email)}:${ipPrefix(caller.ip)}`
  const now = deps.clock.nowUs()
  const record = await findSigninFailures(deps.db, key)
  if (record && record.blockedUntil > now) throw AccountErrors.signinBlocked(Math.ceil((record.blockedUntil - now) / 1_000_000))

  const user = await findUserByEmail(deps.db, email)
  const ok = user?.passwordHash ? await verifyPassword(user.passwordHash, input.password) : await burnPasswordCheck(input.password)
  if (!user || !ok) {
    await withTransaction(deps.db, async (tx) => {
      const current = await findSigninFailures(tx, key)
      const failures = (current?.failures ?? 0) + 1
      const at = deps.clock.nowUs()
      await saveSigninFailures(tx, { key, failures, blockedUntil: at + blockSeconds(failures) * 1_000_000, updatedAt: at })
      if (user) await recordMemberEvent(tx, deps, { tenantId: user.tenantId, userId: user.id, ...caller }, 'auth.sign_in', 'denied')
    })
    deps.log.info('sign-in failed', { ip_network: ipPrefix(caller.ip) })
    throw AccountErrors.wrongCredentials()
  }
  return await withTransaction(deps.db, async (tx) => {
    await clearSigninFailures(tx, key)
    await recordMemberEvent(tx, deps, { tenantId: user.tenantId, userId: user.id, ...caller }, 'auth.sign_in')
    return { user, session: await startSession(tx, deps, { userId: user.id, ...caller }) }
  })
}
