import type { Static } from '@sinclair/typebox'
import { withTransaction } from '../../../db/client'
import { requireCaptcha } from './accounts.captcha'
import type { Deps } from '../../platform/context'
import { recordMemberEvent } from '../audit'
import { enqueueMail } from '../mail'
import { deleteUserSessions, startSession, type NewSession } from '../sessions'
import { findUserByEmail, setPassword, type UserRow } from '../users'
import { AccountErrors } from './accounts.errors'
import { resetCodeMail } from './accounts.mail'
import type { CodeCheck, ResetStart, SetPassword } from './accounts.model'
import { checkedPasswordHash, consumeTicket, emailKey, issueCode, normalizeEmail, RESEND_COOLDOWN_SECONDS, verifyCodeForTicket } from './codes.service'
import { AUTH_LIMITS, limitByEmail, limitByNetwork } from './limits'
import type { Caller } from './signup.service'

/**
 * Password reset: always 202; an unknown address gets an inert row (same cooldown) and no email.
 * Completing sets the new password, ends every other session and signs the user in.
 */
export async function startReset({ deps, input, caller }: { deps: Deps; input: Static<typeof ResetStart>; caller: Caller }) {
  const email = normalizeEmail(input.email)
  await limitByNetwork(deps, 'reset-start', caller.ip, AUTH_LIMITS.start.perNetwork)
  await limitByEmail(deps, 'reset-start', emailKey(deps, email), AUTH_LIMITS.start.perEmail)
  await requireCaptcha(deps, input.captcha_token, caller.ip)
  await withTransaction(deps.db, async (tx) => {
    const user = await findUserByEmail(tx, email)
    const code = await issueCode(tx, deps, { purpose: 'reset', email, inert: !user, userId: user?.id ?? null })
    if (code) await enqueueMail(tx, deps, resetCodeMail(email, code, deps.config.publicUrl))
  })
  deps.mail.kick()
  return { resend_cooldown_seconds: RESEND_COOLDOWN_SECONDS }
}

export async function verifyReset({ deps, input, caller }: { deps: Deps; input: Static<typeof CodeCheck>; caller: Caller }) {
  return await verifyCodeForTicket(deps, 'reset', input, caller.ip)
}

export async function completeReset({
  deps,
  input,
  caller,
}: {
  deps: Deps
  input: Static<typeof SetPassword>
  caller: Caller
}): Promise<{ user: UserRow; session: NewSession }> {
  const passwordHash = await checkedPasswordHash(deps, 'reset', input.password, caller.ip)
  return await withTransaction(deps.db, async (tx) => {
    const ticket = await consumeTicket(tx, deps, 'reset', input.ticket)
    const user = await findUserByEmail(tx, ticket.email)
    if (!user || user.id !== ticket.userId) throw AccountErrors.accountChanged()
    const now = deps.clock.nowUs()
    await setPassword(tx, user.id, passwordHash, now)
    await deleteUserSessions(tx, user.id)
    await recordMemberEvent(tx, deps, { tenantId: user.tenantId, userId: user.id, ...caller }, 'auth.password_reset')
    const session = await startSession(tx, deps, { userId: user.id, ...caller })
    return { user: { ...user, passwordHash, updatedAt: now }, session }
  })
}
